// Standard base64 (RFC 4648, with padding), for AdmissionReview patches and CA bundles.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpu_admission::webhook {

void append_base64(std::string& out, std::string_view data);
std::string base64_encode(std::string_view data);
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace gpu_admission::webhook
