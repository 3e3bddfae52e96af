#include "server/http/tls.h"

#include <openssl/err.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace cerulean::server {

namespace ssl = boost::asio::ssl;

namespace {

// The reason of OpenSSL's most recent error, and clears the error queue.
std::string LastOpenSslError() {
  unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof(buf));
  return buf;
}

std::string CheckReadable(const std::string& flag, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return flag + " " + path + ": no such file";
  std::ifstream in(path, std::ios::binary);
  if (!in) return flag + " " + path + ": cannot read the file";
  return {};
}

std::string UsePem(const TlsFiles& files, ssl::context& ctx) {
  boost::system::error_code ec;
  ctx.use_certificate_chain_file(files.cert, ec);
  if (ec) return "--cert " + files.cert + ": not a PEM certificate (" + ec.message() + ")";
  // Always a callback: without one OpenSSL would prompt on the terminal for
  // an encrypted key given without --pwd.
  std::string password = files.password;
  ctx.set_password_callback([password](size_t, ssl::context::password_purpose) { return password; },
                            ec);
  if (ec) return "--pwd: " + ec.message();
  ctx.use_private_key_file(files.key, ssl::context::pem, ec);
  if (ec) return "--key " + files.key + ": not a usable PEM private key (" + ec.message() + ")";
  return {};
}

struct Pkcs12Free {
  void operator()(PKCS12* p) const { PKCS12_free(p); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct X509StackFree {
  void operator()(STACK_OF(X509) * s) const { sk_X509_pop_free(s, X509_free); }
};

// Loads OpenSSL's legacy provider (RC2, 3DES) next to the default one, for
// .pfx files exported by older tools. Returns false if it is unavailable.
bool LoadLegacyProviders() {
  static const bool loaded = OSSL_PROVIDER_load(nullptr, "legacy") != nullptr &&
                             OSSL_PROVIDER_load(nullptr, "default") != nullptr;
  return loaded;
}

std::string UsePfx(const TlsFiles& files, ssl::context& ctx) {
  std::ifstream in(files.cert, std::ios::binary);
  std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  std::unique_ptr<PKCS12, Pkcs12Free> p12(d2i_PKCS12(nullptr, &p, static_cast<long>(data.size())));
  if (!p12) {
    ERR_clear_error();
    return "--cert " + files.cert +
           ": not a PKCS #12 (.pfx) file; give --key for a PEM certificate";
  }
  const char* password = files.password.c_str();
  if (PKCS12_mac_present(p12.get()) &&
      PKCS12_verify_mac(p12.get(), password, static_cast<int>(files.password.size())) != 1) {
    ERR_clear_error();
    return "--pwd: wrong password for " + files.cert;
  }
  EVP_PKEY* raw_key = nullptr;
  X509* raw_cert = nullptr;
  STACK_OF(X509)* raw_chain = nullptr;
  bool parsed = PKCS12_parse(p12.get(), password, &raw_key, &raw_cert, &raw_chain) == 1;
  if (!parsed && LoadLegacyProviders()) {
    ERR_clear_error();
    parsed = PKCS12_parse(p12.get(), password, &raw_key, &raw_cert, &raw_chain) == 1;
  }
  std::unique_ptr<EVP_PKEY, PkeyFree> key(raw_key);
  std::unique_ptr<X509, X509Free> cert(raw_cert);
  std::unique_ptr<STACK_OF(X509), X509StackFree> chain(raw_chain);
  if (!parsed)
    return "--cert " + files.cert + ": cannot decrypt the .pfx (" + LastOpenSslError() + ")";
  if (!key || !cert)
    return "--cert " + files.cert + ": the .pfx holds no certificate with its private key";
  SSL_CTX* native = ctx.native_handle();
  if (SSL_CTX_use_certificate(native, cert.get()) != 1 ||
      SSL_CTX_use_PrivateKey(native, key.get()) != 1) {
    return "--cert " + files.cert + ": " + LastOpenSslError();
  }
  for (int i = 0; chain && i < sk_X509_num(chain.get()); ++i) {
    if (SSL_CTX_add1_chain_cert(native, sk_X509_value(chain.get(), i)) != 1) {
      return "--cert " + files.cert + ": " + LastOpenSslError();
    }
  }
  return {};
}

}  // namespace

std::string MakeTlsContext(const TlsFiles& files, std::unique_ptr<ssl::context>* out) {
  if (files.cert.empty()) return "--key and --pwd need --cert FILE";
  bool pem = !files.key.empty();
  if (!pem && files.password.empty()) {
    return "--cert needs --key FILE (PEM certificate) or --pwd PASSWORD (.pfx certificate)";
  }
  if (std::string err = CheckReadable("--cert", files.cert); !err.empty()) return err;
  if (pem) {
    if (std::string err = CheckReadable("--key", files.key); !err.empty()) return err;
  }

  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::single_dh_use,
                   ec);
  if (ec) return "TLS options: " + ec.message();
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);

  std::string err = pem ? UsePem(files, *ctx) : UsePfx(files, *ctx);
  if (!err.empty()) return err;
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    ERR_clear_error();
    return "--cert " + files.cert + ": the private key does not match the certificate";
  }
  *out = std::move(ctx);
  return {};
}

}  // namespace cerulean::server
