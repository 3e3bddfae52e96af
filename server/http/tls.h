// The server's TLS context, built from the azurite-compatible --cert / --key
// / --pwd flags: a PEM certificate chain with a PEM private key (optionally
// encrypted with --pwd), or a PKCS #12 (.pfx) file with its password.
// Thread-safety: MakeTlsContext is called once by main; the context is then
// shared read-only by every TLS session (OpenSSL SSL_CTX is thread-safe for
// that use).
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

namespace cerulean::server {

struct TlsFiles {
  std::string cert;      // PEM certificate (chain) or .pfx file
  std::string key;       // PEM private key; empty for PFX
  std::string password;  // PFX password, or the PEM key's passphrase
};

// True iff any of the TLS flags was given.
inline bool TlsRequested(const TlsFiles& files) {
  return !files.cert.empty() || !files.key.empty() || !files.password.empty();
}

// Builds a TLS 1.2+ server context. Azurite's rule picks the format: a key
// file means PEM, otherwise a password means PFX. Returns an error message
// for a missing combination, an unreadable file, a wrong password or a key
// that does not match the certificate; *out is set iff the result is empty.
std::string MakeTlsContext(const TlsFiles& files, std::unique_ptr<boost::asio::ssl::context>* out);

}  // namespace cerulean::server
