// The TLS side of the server (internal to webhook/server/): the holder of the serving identity
// (TlsIdentity, declared in https_server.h), the server's SSL_CTX whose certificate callback
// installs the identity current at each handshake, and OpenSSL error text.
#pragma once

#include <openssl/ssl.h>

#include <mutex>
#include <string>
#include <utility>

#include "webhook/server/https_server.h"

namespace gpu_admission::webhook::detail {

// The serving identity, swapped by reloads and read once per handshake. A mutex rather than
// std::atomic<std::shared_ptr>: libstdc++ 12 unlocks that one with a relaxed store in load(),
// which ThreadSanitizer rightly reports; an uncontended mutex costs nothing next to a handshake.
class IdentityHolder {
 public:
  TlsIdentityPtr load() const {
    std::lock_guard lock(mutex_);
    return current_;
  }
  void store(TlsIdentityPtr next) {
    TlsIdentityPtr previous;
    {
      std::lock_guard lock(mutex_);
      previous = std::exchange(current_, std::move(next));
    }
  }  // the previous identity is released outside the lock

 private:
  mutable std::mutex mutex_;
  TlsIdentityPtr current_;
};

// A server context for TLS 1.2+ whose handshakes use `holder`'s identity at that moment.
// nullptr with `error` set on failure; the caller frees it with SSL_CTX_free.
SSL_CTX* create_tls_context(IdentityHolder* holder, std::string& error);

// The queued OpenSSL errors of this thread, "; "-separated (and cleared).
std::string openssl_errors();

}  // namespace gpu_admission::webhook::detail
