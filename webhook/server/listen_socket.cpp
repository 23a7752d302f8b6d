// Listen addresses ("HOST:PORT", "[IPV6]:PORT", ":PORT") and the listening sockets opened for
// them, one per event loop on one port (SO_REUSEPORT); see listen_socket.h.
#include "webhook/server/listen_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace gpu_admission::webhook {

std::string ListenAddress::to_string() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string& error) {
  ListenAddress address;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      error = "invalid listen address \"" + std::string(text) + "\": expected [IPV6]:PORT";
      return std::nullopt;
    }
    address.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      error = "invalid listen address \"" + std::string(text) + "\": expected HOST:PORT";
      return std::nullopt;
    }
    address.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  int port = 0;
  if (port_text.empty() || port_text.size() > 5) port = -1;
  for (char c : port_text) {
    if (c < '0' || c > '9') {
      port = -1;
      break;
    }
    port = port * 10 + (c - '0');
  }
  if (port < 0 || port > 65535) {
    error = "invalid port in listen address \"" + std::string(text) + "\"";
    return std::nullopt;
  }
  address.port = port;
  return address;
}

namespace detail {

std::string errno_text(int code) {
  char buffer[256];
  return std::string(strerror_r(code, buffer, sizeof buffer));
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

namespace {

struct AddressList {
  addrinfo* results = nullptr;
  ~AddressList() {
    if (results != nullptr) ::freeaddrinfo(results);
  }
};

// What `address` resolves to; for all interfaces, a dual-stack IPv6 address first (IPv4 is the
// fallback).
std::vector<addrinfo*> resolve(const ListenAddress& address, AddressList& list, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const std::string port_text = std::to_string(address.port);
  const int rc = ::getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port_text.c_str(), &hints,
                               &list.results);
  if (rc != 0) {
    error = "cannot resolve listen address " + address.to_string() + ": " + gai_strerror(rc);
    return {};
  }
  std::vector<addrinfo*> candidates;
  for (addrinfo* ai = list.results; ai != nullptr; ai = ai->ai_next) candidates.push_back(ai);
  if (address.host.empty())
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const addrinfo* a, const addrinfo* b) { return a->ai_family == AF_INET6 && b->ai_family != AF_INET6; });
  return candidates;
}

int port_of(const sockaddr_storage& address) {
  return address.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port)
                                       : ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

socklen_t length_of(const sockaddr_storage& address) {
  return address.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

constexpr int kReusePortUnsupported = -2;

// A non-blocking TCP socket bound to `address` with SO_REUSEADDR (and SO_REUSEPORT when
// `reuse_port`), listening when `start_listening`. `v6only`: IPV6_V6ONLY for an IPv6 socket, -1
// for the system's default. -1 with errno set on failure; kReusePortUnsupported when the
// kernel has no SO_REUSEPORT.
int bind_socket(const sockaddr* address, socklen_t length, int v6only, bool reuse_port, bool start_listening) {
  int fd = ::socket(address->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuse_port && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    close_fd(fd);
    return kReusePortUnsupported;
  }
  if (address->sa_family == AF_INET6 && v6only >= 0) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  if (::bind(fd, address, length) != 0 || (start_listening && ::listen(fd, SOMAXCONN) != 0)) {
    const int saved = errno;
    close_fd(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

// `count` listening sockets on one resolved address; see open_listeners.
std::vector<int> listen_on(const addrinfo* ai, int v6only, size_t count, const ListenAddress& address,
                           std::string& error) {
  const auto failed = [&] {
    error = "cannot listen on " + address.to_string() + ": " + errno_text(errno);
    return std::vector<int>{};
  };
  if (count <= 1) {
    const int fd = bind_socket(ai->ai_addr, ai->ai_addrlen, v6only, false, true);
    return fd >= 0 ? std::vector<int>{fd} : failed();
  }
  int probe = bind_socket(ai->ai_addr, ai->ai_addrlen, v6only, false, false);
  if (probe < 0) return failed();
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof bound;
  if (::getsockname(probe, reinterpret_cast<sockaddr*>(&bound), &bound_length) != 0) {
    close_fd(probe);
    return failed();
  }
  std::vector<int> fds;
  while (fds.size() < count) {
    const int fd = bind_socket(reinterpret_cast<const sockaddr*>(&bound), length_of(bound), v6only, true, true);
    if (fd >= 0) {
      fds.push_back(fd);
      continue;
    }
    const int saved = errno;
    if (fds.empty() && probe >= 0 && saved == EADDRINUSE) {
      close_fd(probe);  // a kernel on which the probe's bind blocks ours: its check is done
      continue;
    }
    for (int& opened : fds) close_fd(opened);
    if (fd == kReusePortUnsupported && probe >= 0 && ::listen(probe, SOMAXCONN) == 0) return {probe};  // shared
    close_fd(probe);
    errno = saved;
    return failed();
  }
  close_fd(probe);  // kept until now so that the port stayed ours
  return fds;
}

bool is_listening_tcp(int fd, sockaddr_storage& bound) {
  int listening = 0;
  socklen_t size = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening == 0) return false;
  int type = 0;
  size = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) return false;
  socklen_t length = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return false;
  return bound.ss_family == AF_INET || bound.ss_family == AF_INET6;
}

}  // namespace

// With count > 1, a probe socket is bound first without SO_REUSEPORT: that fails when anyone
// listens on the port already (two servers on one port would silently share its connections),
// and for port 0 it picks the port; the listeners, with SO_REUSEPORT, then bind next to it.
std::vector<int> open_listeners(const ListenAddress& address, size_t count, int& bound_port, std::string& error) {
  AddressList list;
  const std::vector<addrinfo*> candidates = resolve(address, list, error);
  if (candidates.empty()) {
    if (error.empty()) error = "cannot listen on " + address.to_string();
    return {};
  }
  error.clear();
  for (const addrinfo* ai : candidates) {
    const int v6only = ai->ai_family == AF_INET6 && address.host.empty() ? 0 : -1;
    std::vector<int> fds = listen_on(ai, v6only, count, address, error);
    if (fds.empty()) continue;
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    if (::getsockname(fds.front(), reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
      error = "getsockname: " + errno_text(errno);
      for (int& fd : fds) close_fd(fd);
      return {};
    }
    bound_port = port_of(bound);
    return fds;
  }
  if (error.empty()) error = "cannot listen on " + address.to_string();
  return {};
}

std::vector<int> adopt_listener(int fd, size_t count, int& bound_port, std::string& error) {
  sockaddr_storage bound{};
  if (!is_listening_tcp(fd, bound)) {
    error = "listen fd " + std::to_string(fd) + " is not a listening TCP socket";
    close_fd(fd);
    return {};
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  bound_port = port_of(bound);
  std::vector<int> fds{fd};
  int reuse_port = 0;
  socklen_t size = sizeof reuse_port;
  if (count <= 1 || ::getsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &reuse_port, &size) != 0 || reuse_port == 0) return fds;
  int v6only = -1;
  size = sizeof v6only;
  if (bound.ss_family == AF_INET6) ::getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &size);
  while (fds.size() < count) {
    const int sibling = bind_socket(reinterpret_cast<const sockaddr*>(&bound), length_of(bound), v6only, true, true);
    if (sibling < 0) {  // another owner's port group, say: the loops share `fd`
      for (size_t i = 1; i < fds.size(); ++i) close_fd(fds[i]);
      return {fd};
    }
    fds.push_back(sibling);
  }
  return fds;
}

void describe_address(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  } else {
    port = 0;
  }
  ip = text;
}

}  // namespace detail

}  // namespace gpu_admission::webhook
