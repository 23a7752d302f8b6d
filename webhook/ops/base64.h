// Base64 (RFC 4648), the project's one encoder and decoder, in both alphabets: AdmissionReview
// patches, the caBundle `certs` prints, the data of kubeconfigs and Secrets (read, and written for
// exec plugins and self-managed certificates), and the tests' and benchmarks' own uses.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpu_admission::webhook {

// standard: A-Z a-z 0-9 + / (RFC 4648 section 4); url: the same with - and _ (section 5).
enum class Base64Alphabet { standard, url };

// Appends the base64 of `data` on one line: padded with '=' unless `pad` is false (Go's Raw*
// encodings).
void append_base64(std::string& out, std::string_view data, Base64Alphabet alphabet = Base64Alphabet::standard,
                   bool pad = true);
std::string base64_encode(std::string_view data, Base64Alphabet alphabet = Base64Alphabet::standard,
                          bool pad = true);

// Decodes what kubeconfigs and hand-written objects hold in practice: spaces, tabs and line
// breaks are skipped, padding is optional (at most two '=', nothing after them), and either
// alphabet is read. nullopt when `text` is not base64: any other byte, data after padding, more
// than two '=', or a last group of a single character (6 bits, not a byte).
std::optional<std::string> base64_decode(std::string_view text);

// Decodes as Go's base64.StdEncoding (URLEncoding) does, which is how the API server reads a
// []byte field (a Secret's data, a caBundle): only line breaks are skipped, every other byte is
// of `alphabet`, and the text is whole groups of four, padded. nullopt otherwise.
std::optional<std::string> base64_decode_strict(std::string_view text,
                                                Base64Alphabet alphabet = Base64Alphabet::standard);

}  // namespace gpu_admission::webhook
