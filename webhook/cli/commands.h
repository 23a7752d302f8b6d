// webhook/cli: the command-line interface. `main.cpp` dispatches to one file per command
// (cli_check, cli_test, cli_audit, cli_policy, cli_serve, cli_certs); `cli_args` parses flags; `offline`
// evaluates manifest objects for `check` and `test` (through the admission decision phase for
// AdmissionReviews); `test_suite` and `junit` run suites and write JUnit XML. The top layer: it
// may include every other folder (server/, admission/, ops/, io/, policy/, certs/).
//
// Entry points of the `gpu-admission` subcommands. Each takes the arguments after its name and
// returns the process exit code: 0 ok, 1 denied / failed, 2 unusable input.
#pragma once

#include <string>
#include <vector>

namespace gpu_admission::webhook {

using Args = std::vector<std::string>;

int run_check(const Args& args);
int run_policy(const Args& args);   // policy lint [--strict] FILE|- | policy show [--default|FILE] | policy export --format vap
int run_test(const Args& args);     // test SUITE.yaml|DIR... [--run REGEX]
int run_audit(const Args& args);    // audit [--kubeconfig FILE] [--context NAME] [--write-reports] [--interval D] [FILE...|-]
int run_serve(const Args& args);    // serve [--policy FILE] [--tls-cert FILE --tls-key FILE] ...
int run_certs(const Args& args);    // certs --service NAME --namespace NS [--out-dir DIR] [--days N]

}  // namespace gpu_admission::webhook
