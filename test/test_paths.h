// Where the tests find the checkout, the shared corpora (the shared folder beside it) and the
// gpu-admission binary they start. The paths are compiled into test_paths.cpp alone, so no other
// test source depends on where the checkout lies: clones share their objects in a compiler cache.
#pragma once

#include <string>

namespace test_paths {

const char* source_dir();
const char* shared_dir();
const char* binary();

// The folder `name` of the shared corpora (../shared/corpora/<name>), or "" when it is absent:
// the test then prints "skipped: corpus not found: PATH" on stdout, which CTest reports as a
// skipped test (test/CMakeLists.txt), never a silent pass. Under CI=true with the shared folder
// present, a missing corpus fails the calling test instead. `whole_test` false: the test goes on
// without that part, so it says "part skipped" instead (CTest must still report its failures).
std::string corpus(const std::string& name, bool whole_test = true);

}  // namespace test_paths
