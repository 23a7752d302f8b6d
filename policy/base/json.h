// The JSON tree type used for documents outside the hot path (policy files, CLI output, tests).
// ordered_json keeps keys in source order, so printed objects read like their input.
#pragma once

#include <nlohmann/json.hpp>

namespace gpu_admission {
using Json = nlohmann::ordered_json;
}
