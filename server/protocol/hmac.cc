#include "server/protocol/hmac.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

namespace cerulean::server {

namespace {

// A per-thread HMAC-SHA256 context keyed with the last key used. Every
// request signs with one of a few account keys; re-keying or fetching the
// algorithm per call (as one-shot HMAC() does in OpenSSL 3) costs more than
// the MAC itself.
class HmacCache {
 public:
  HmacCache() {
    mac_ = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (mac_ != nullptr) ctx_ = EVP_MAC_CTX_new(mac_);
  }
  ~HmacCache() {
    EVP_MAC_CTX_free(ctx_);
    EVP_MAC_free(mac_);
  }
  HmacCache(const HmacCache&) = delete;
  HmacCache& operator=(const HmacCache&) = delete;

  // False iff OpenSSL failed (the caller falls back to the one-shot API).
  bool Sign(std::string_view key, std::string_view message, unsigned char* md, size_t* len) {
    if (ctx_ == nullptr) return false;
    bool same_key = have_key_ && key == key_;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string("digest", const_cast<char*>("SHA256"), 0),
        OSSL_PARAM_construct_end()};
    int ok = same_key ? EVP_MAC_init(ctx_, nullptr, 0, nullptr)
                      : EVP_MAC_init(ctx_, reinterpret_cast<const unsigned char*>(key.data()),
                                     key.size(), params);
    if (ok != 1) {
      have_key_ = false;
      return false;
    }
    if (!same_key) {
      key_.assign(key);
      have_key_ = true;
    }
    return EVP_MAC_update(ctx_, reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1 &&
           EVP_MAC_final(ctx_, md, len, EVP_MAX_MD_SIZE) == 1;
  }

 private:
  EVP_MAC* mac_ = nullptr;
  EVP_MAC_CTX* ctx_ = nullptr;
  std::string key_;
  bool have_key_ = false;
};

}  // namespace

std::string HmacSha256(std::string_view key, std::string_view message) {
  thread_local HmacCache cache;
  unsigned char md[EVP_MAX_MD_SIZE];
  size_t len = 0;
  if (cache.Sign(key, message, md, &len)) return std::string(reinterpret_cast<char*>(md), len);
  unsigned int one_shot_len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), md, &one_shot_len);
  return std::string(reinterpret_cast<char*>(md), one_shot_len);
}

bool SecureEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace cerulean::server
