// Listening sockets for the server (internal to webhook/server/): opening a non-blocking
// listener for a ListenAddress (declared in https_server.h), naming socket addresses, and the
// errno and descriptor helpers the connection engine shares.
#pragma once

#include <sys/socket.h>

#include <string>

#include "webhook/server/https_server.h"

namespace gpu_admission::webhook::detail {

std::string errno_text(int code);  // strerror_r, thread-safe

// Closes `fd` if open and sets it to -1.
void close_fd(int& fd);

// A non-blocking listening socket; `bound_port` receives the actual port (for port 0).
// -1 with `error` set on failure.
int open_listener(const ListenAddress& address, int& bound_port, std::string& error);

// The numeric IP and port of an IPv4 or IPv6 address ("" and 0 for anything else).
void describe_address(const sockaddr_storage& address, std::string& ip, int& port);

}  // namespace gpu_admission::webhook::detail
