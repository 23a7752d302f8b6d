// The paths test_paths.h hands out, given by test/CMakeLists.txt to this file alone.
#include "test_paths.h"

namespace test_paths {

const char* source_dir() { return GPU_ADMISSION_SOURCE_DIR; }
const char* shared_dir() { return GPU_ADMISSION_SHARED_DIR; }
const char* binary() { return GPU_ADMISSION_BINARY; }

}  // namespace test_paths
