// Entry points of the `gpu-admission` subcommands. Each takes the arguments after its name and
// returns the process exit code (SPEC 7: 0 ok, 1 denied / failed, 2 unusable input).
#pragma once

#include <string>
#include <vector>

namespace gpu_admission::webhook {

using Args = std::vector<std::string>;

int run_check(const Args& args);
int run_policy(const Args& args);   // policy lint FILE | policy show [--default|FILE]
int run_test(const Args& args);     // test SUITE.yaml...
int run_serve(const Args& args);    // serve [--policy FILE] [--tls-cert FILE --tls-key FILE] ...
int run_certs(const Args& args);    // certs --service NAME --namespace NS [--out-dir DIR] [--days N]

}  // namespace gpu_admission::webhook
