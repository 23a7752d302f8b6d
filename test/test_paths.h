// Where the tests find the checkout, the shared corpora (the shared folder beside it) and the
// gpu-admission binary they start. The paths are compiled into test_paths.cpp alone, so no other
// test source depends on where the checkout lies: clones share their objects in a compiler cache.
#pragma once

namespace test_paths {

const char* source_dir();
const char* shared_dir();
const char* binary();

}  // namespace test_paths
