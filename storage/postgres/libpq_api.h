// LibPq: the libpq functions the PostgreSQL store calls, looked up in the
// shared library when first needed (SharedLibrary) rather than linked: libpq
// and the ~25 libraries it needs (GnuTLS, Kerberos, LDAP, ...) would be
// loaded and relocated at every start (LD_DEBUG=statistics shows the cost),
// which a server on the default SQLite store would pay for nothing. Internal to
// storage/postgres (the only files that see libpq-fe.h).
// Thread-safety: Pq() may be called from any thread; LibPq is immutable.
#pragma once

#include <libpq-fe.h>

#include <string>

namespace cerulean::storage {

// clang-format off
#define CERULEAN_LIBPQ_FUNCTIONS(X)                                                         \
  X(PQclear) X(PQcmdTuples) X(PQconnectdbParams) X(PQerrorMessage) X(PQescapeIdentifier) \
  X(PQfinish) X(PQfreemem) X(PQgetisnull) X(PQgetlength) X(PQgetvalue) X(PQntuples)     \
  X(PQresultErrorField) X(PQresultErrorMessage) X(PQresultStatus) X(PQsetNoticeProcessor) \
  X(PQstatus) X(PQtransactionStatus) X(PQenterPipelineMode) X(PQexitPipelineMode)       \
  X(PQpipelineSync) X(PQgetResult) X(PQsendPrepare) X(PQsendQueryPrepared)              \
  X(PQsendQueryParams) X(PQsendQuery) X(PQconninfoParse) X(PQconninfoFree)              \
  X(PQsetnonblocking) X(PQflush) X(PQconsumeInput) X(PQisBusy) X(PQsocket) X(PQhost)    \
  X(PQport)
// clang-format on

struct LibPq {
#define CERULEAN_DECLARE(f) decltype(&::f) f = nullptr;
  CERULEAN_LIBPQ_FUNCTIONS(CERULEAN_DECLARE)
#undef CERULEAN_DECLARE
  std::string error;  // why it could not be loaded; empty when loaded
};

// libpq's functions, loaded on the first call; if loading failed, error
// says why and the functions are null.
const LibPq& Pq();

// A libpq message (null: empty) on one line: libpq's multi-line messages
// (one per host tried) joined, runs of blanks and the trailing newline gone.
std::string PqMessage(const char* msg);

}  // namespace cerulean::storage
