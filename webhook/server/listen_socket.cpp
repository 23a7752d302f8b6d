// Listen addresses ("HOST:PORT", "[IPV6]:PORT", ":PORT") and the listening sockets opened for
// them; see listen_socket.h.
#include "webhook/server/listen_socket.h"

#include <arpa/inet.h>
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

// A non-blocking listening socket; `bound_port` receives the actual port (for port 0).
int open_listener(const ListenAddress& address, int& bound_port, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* results = nullptr;
  const std::string port_text = std::to_string(address.port);
  const int rc = ::getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port_text.c_str(), &hints,
                               &results);
  if (rc != 0) {
    error = "cannot resolve listen address " + address.to_string() + ": " + gai_strerror(rc);
    return -1;
  }
  // All interfaces: prefer one dual-stack IPv6 socket, fall back to IPv4.
  std::vector<addrinfo*> candidates;
  for (addrinfo* ai = results; ai != nullptr; ai = ai->ai_next) candidates.push_back(ai);
  if (address.host.empty())
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const addrinfo* a, const addrinfo* b) { return a->ai_family == AF_INET6 && b->ai_family != AF_INET6; });
  int fd = -1;
  error.clear();
  for (addrinfo* ai : candidates) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      error = "socket: " + errno_text(errno);
      continue;
    }
    const int one = 1;
    const int zero = 0;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6 && address.host.empty()) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      error = "cannot listen on " + address.to_string() + ": " + errno_text(errno);
      close_fd(fd);
      continue;
    }
    break;
  }
  ::freeaddrinfo(results);
  if (fd < 0) {
    if (error.empty()) error = "cannot listen on " + address.to_string();
    return -1;
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    error = "getsockname: " + errno_text(errno);
    close_fd(fd);
    return -1;
  }
  bound_port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                           : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
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
