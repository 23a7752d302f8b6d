// The one base64 encoder and decoder (webhook/ops/base64.h): RFC 4648's test vectors in both
// alphabets, padded and raw, every byte value through a round trip, and the inputs each decoder
// refuses (the lenient one for kubeconfigs, the strict one as the API server reads []byte).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "webhook/ops/base64.h"

using gpu_admission::webhook::Base64Alphabet;
using gpu_admission::webhook::append_base64;
using gpu_admission::webhook::base64_decode;
using gpu_admission::webhook::base64_decode_strict;
using gpu_admission::webhook::base64_encode;

namespace {

struct Vector {
  std::string plain, encoded;
};

// RFC 4648 section 10.
const std::vector<Vector> kRfcVectors = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                         {"foo", "Zm9v"},  {"foob", "Zm9vYg=="},  {"fooba", "Zm9vYmE="},
                                         {"foobar", "Zm9vYmFy"}};

std::string without_padding(std::string text) {
  while (!text.empty() && text.back() == '=') text.pop_back();
  return text;
}

}  // namespace

TEST_CASE("base64: RFC 4648 vectors, padded and raw, both decoders", "[ops][base64]") {
  for (const auto& [plain, encoded] : kRfcVectors) {
    INFO(plain);
    CHECK(base64_encode(plain) == encoded);
    CHECK(base64_encode(plain, Base64Alphabet::url) == encoded);  // no + or / in these
    CHECK(base64_encode(plain, Base64Alphabet::standard, false) == without_padding(encoded));
    CHECK(base64_decode(encoded) == plain);
    CHECK(base64_decode(without_padding(encoded)) == plain);
    CHECK(base64_decode_strict(encoded) == plain);
    CHECK(base64_decode_strict(encoded, Base64Alphabet::url) == plain);
  }
  std::string appended = "prefix:";
  append_base64(appended, "foob");
  CHECK(appended == "prefix:Zm9vYg==");
}

TEST_CASE("base64: the two alphabets differ in 62 and 63", "[ops][base64]") {
  const std::string bytes("\xfb\xff\xbf\x00\x10", 5);
  CHECK(base64_encode(bytes) == "+/+/ABA=");
  CHECK(base64_encode(bytes, Base64Alphabet::url) == "-_-_ABA=");
  CHECK(base64_encode(bytes, Base64Alphabet::url, false) == "-_-_ABA");
  CHECK(base64_decode("+/+/ABA=") == bytes);
  CHECK(base64_decode("-_-_ABA") == bytes);  // the lenient decoder reads either, padded or not
  CHECK(base64_decode_strict("+/+/ABA=") == bytes);
  CHECK(base64_decode_strict("-_-_ABA=", Base64Alphabet::url) == bytes);
  CHECK_FALSE(base64_decode_strict("-_-_ABA="));                          // url digits, standard asked
  CHECK_FALSE(base64_decode_strict("+/+/ABA=", Base64Alphabet::url));    // and the other way round
}

TEST_CASE("base64: every byte value and every length survive a round trip", "[ops][base64]") {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (size_t length = 0; length <= 7; ++length) {
    const std::string part = bytes.substr(200, length);
    for (const auto alphabet : {Base64Alphabet::standard, Base64Alphabet::url}) {
      CHECK(base64_decode(base64_encode(part, alphabet)) == part);
      CHECK(base64_decode(base64_encode(part, alphabet, false)) == part);
      CHECK(base64_decode_strict(base64_encode(part, alphabet), alphabet) == part);
    }
  }
  const std::string encoded = base64_encode(bytes);
  CHECK(encoded.size() == 344);
  CHECK(encoded.find('\n') == std::string::npos);  // one line, as a caBundle is
  CHECK(base64_decode(encoded) == bytes);
}

TEST_CASE("base64: the lenient decoder skips whitespace and refuses what is not base64", "[ops][base64]") {
  CHECK(base64_decode("Zm9v\nYmFy\r\n") == "foobar");
  CHECK(base64_decode(" Zm9v\tYg== ") == "foob");
  for (const std::string bad : {"Zm9v*", "Z", "Zm9vY", "Zg==Zg==", "Zg===", "Zm9v\x80", "Zg=g"}) {
    INFO(bad);
    CHECK_FALSE(base64_decode(bad));
  }
}

TEST_CASE("base64: the strict decoder wants whole padded groups, as Go's StdEncoding", "[ops][base64]") {
  CHECK(base64_decode_strict("Zm9v\r\nYmFy\n") == "foobar");  // line breaks only are skipped
  for (const std::string bad : {"Zg", "Zm8", "Zg=", "Z===", "Zm9v=", "Zg==Zg==", "Zm9v Yg==", "Zm9v\tYg==", "Zm9v*A==",
                                "=Zg=", "Zm9vYmFy="}) {
    INFO(bad);
    CHECK_FALSE(base64_decode_strict(bad));
  }
}
