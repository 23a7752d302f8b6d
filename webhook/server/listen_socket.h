// Listening sockets for the server (internal to webhook/server/): opening the event loops'
// non-blocking listeners for a ListenAddress (declared in https_server.h) or taking over one
// already open, naming socket addresses, and the errno and descriptor helpers the connection
// engine shares.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string>
#include <vector>

#include "webhook/server/https_server.h"

namespace gpu_admission::webhook::detail {

std::string errno_text(int code);  // strerror_r, thread-safe

// Closes `fd` if open and sets it to -1.
void close_fd(int& fd);

// `count` non-blocking listening sockets for `address`, one per event loop: bound to one port
// with SO_REUSEPORT, so that the kernel spreads new connections over them (count 1: one plain
// socket). It is an error when anyone listens on the port already. Where the kernel has no
// SO_REUSEPORT, a single socket for the loops to share. `bound_port` receives the port (for
// port 0). Empty with `error` set on failure.
std::vector<int> open_listeners(const ListenAddress& address, size_t count, int& bound_port, std::string& error);

// Takes over `fd`, an already-listening TCP socket (made non-blocking), and returns it with
// count-1 more sockets bound to its address when it has SO_REUSEPORT set and they can be bound;
// otherwise `fd` alone, for the loops to share. Empty with `error` set (and `fd` closed) when
// it is not a listening TCP socket.
std::vector<int> adopt_listener(int fd, size_t count, int& bound_port, std::string& error);

// The numeric IP and port of an IPv4 or IPv6 address ("" and 0 for anything else).
void describe_address(const sockaddr_storage& address, std::string& ip, int& port);

}  // namespace gpu_admission::webhook::detail
