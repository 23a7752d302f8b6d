// Reading JSON On-Demand (simdjson) in one forward pass, for the decoders on the request path
// (the AdmissionReview envelope and the pod decoder). No DOM is built: each object is walked
// once, field by field; keys are matched against a fixed KeyTable made at compile time (no
// hashing per request), and values of keys outside the table are skipped unread.
//
// Ambiguity: a key of the table seen twice in one object is an error, and so is a key repeated
// in a map that is read whole (labels, annotations, nodeSelector, resources). Keys are compared
// unescaped, so "\u0063ontainers" is "containers". Go's decoder, which the API server uses, keeps
// the last of two equal keys; a reader keeping the first would judge another object than the one
// stored. Keys that are not read cannot change the decision and are not compared.
//
// Errors are located with a Loc (policy/base/field_loc.h) and the first one is kept in `error`.
// JSON null reads as absent, as the API server's decoder reads it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "policy/base/field_loc.h"
#include "policy/decoding/pod_decoder.h"  // DecodeError
#include "policy/views/pod_view.h"     // StringViewPairs

#define GPU_ADMISSION_ALWAYS_INLINE __attribute__((always_inline)) inline

namespace gpu_admission::policy::json {

namespace od = simdjson::ondemand;

// The first '"' or '\\' at or after `p`, inside a string of a document iterated by simdjson:
// its closing quote is before the document's end (iterate refuses unclosed strings) and
// SIMDJSON_PADDING readable bytes follow the document, so reading 32 bytes at a time is safe.
GPU_ADMISSION_ALWAYS_INLINE const char* quote_or_backslash(const char* p) {
#ifdef __AVX2__
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  for (;; p += 32) {
    const __m256i block = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const auto hits = static_cast<uint32_t>(_mm256_movemask_epi8(
        _mm256_or_si256(_mm256_cmpeq_epi8(block, quote), _mm256_cmpeq_epi8(block, backslash))));
    if (hits) return p + __builtin_ctz(hits);
  }
#else
  while (*p != '"' && *p != '\\') ++p;
  return p;
#endif
}

// The keys an object is read for; a key's index is its position. At most 64 keys.
template <size_t N>
struct KeyTable {
  static_assert(N <= 64, "a KeyTable holds at most 64 keys");
  std::array<std::string_view, N> names;
  constexpr int find(std::string_view key) const noexcept {
    for (size_t i = 0; i < N; ++i)
      if (names[i] == key) return static_cast<int>(i);
    return -1;
  }
};
template <typename... K>
constexpr KeyTable<sizeof...(K)> keys(K... names) {
  return KeyTable<sizeof...(K)>{{std::string_view(names)...}};
}

// The first key, in sorted order, that appears twice in `names`, or nullopt; n log n. Sorts
// `names` in place (callers pass a copy of the keys).
std::optional<std::string_view> first_repeated(std::span<std::string_view> names);

class Reader {
 public:
  std::optional<DecodeError> error;

  bool fail(const Loc& at, std::string_view message);
  bool fail(const Loc& at, simdjson::error_code code);  // "invalid JSON: ...", flagged
  bool fail_invalid(const Loc& at, std::string_view what);
  bool duplicate(const Loc& at, std::string_view key);

  // Calls on(key, value) for every field of `object`, in document order; stops at the first false.
  template <typename On>
  bool each_field(od::object object, const Loc& at, On&& on) {
    for (auto item : object) {
      // The field is used where it lies: moving it out (a 16-byte load of what was just stored
      // in narrower parts) stalled store-to-load forwarding on every field.
      if (auto code = item.error()) return fail(at, code);
      od::field& field = item.value_unsafe();
      std::string_view key;
      if (auto code = read_key(field, key)) return fail(at, code);
      if (!on(key, field.value())) return false;
    }
    return true;
  }

  // Calls on(index, value, value_at) for each non-null field whose key is in `table`, in
  // document order; skips the others. A key of the table seen twice is an error.
  template <size_t N, typename On>
  bool fields(od::object object, const KeyTable<N>& table, const Loc& at, On&& on) {
    uint64_t seen = 0;
    return each_field(object, at, [&](std::string_view key, od::value& value) {
      const int index = table.find(key);
      if (index < 0) return true;
      const uint64_t bit = uint64_t{1} << index;
      if (seen & bit) return duplicate(at, key);
      seen |= bit;
      const Loc value_at = at.child(table.names[static_cast<size_t>(index)]);
      bool null = false;
      if (!is_null(value, value_at, null)) return false;
      return null || on(index, value, value_at);
    });
  }

  // Every field of a map (null values skipped), in document order: on(key, value, value_at).
  // Repeated keys are the caller's to check (they are collected there).
  template <typename On>
  bool map_fields(od::value& v, const Loc& at, On&& on) {
    od::object object;
    if (!as_object(v, object, at)) return false;
    return each_field(object, at, [&](std::string_view key, od::value& value) {
      const Loc value_at = at.map_key(key);
      bool null = false;
      if (!is_null(value, value_at, null)) return false;
      return null || on(key, value, value_at);
    });
  }

  // Calls each(item, item_at, index) for every entry of a list; stops at the first false.
  template <typename Each>
  bool each_value(od::value& v, const Loc& at, Each&& each) {
    od::array list;
    return as_array(v, list, at) && each_item(list, at, each);
  }
  // The same over a list already entered.
  template <typename Each>
  bool each_item(od::array& list, const Loc& at, Each&& each) {
    uint32_t i = 0;
    for (auto item : list) {
      const Loc item_at = at.item(i);
      od::value value;
      if (auto code = std::move(item).get(value)) return fail(item_at, code);
      if (!each(value, item_at, i)) return false;
      ++i;
    }
    return true;
  }

  // The same requiring an object in each entry: each(object, item_at, index).
  template <typename Each>
  bool each_object(od::value& v, const Loc& at, Each&& each) {
    return each_value(v, at, [&](od::value& value, const Loc& item_at, uint32_t i) {
      od::object object;
      return as_object(value, object, item_at) && each(object, item_at, i);
    });
  }

  // The first character of a value says its type ('{', '[', '"', 't', 'f', 'n', or a number).
  GPU_ADMISSION_ALWAYS_INLINE static char first_char(od::value& v) { return v.raw_json_token().data()[0]; }

  // A key, unescaped: a view of the input when it holds no escape (nearly always), else
  // unescaped into the parser.
  GPU_ADMISSION_ALWAYS_INLINE static simdjson::error_code read_key(od::field& field, std::string_view& key) {
    const char* raw = field.key().raw();
    const char* end = quote_or_backslash(raw);
    if (*end == '"') {
      key = std::string_view(raw, static_cast<size_t>(end - raw));
      return simdjson::SUCCESS;
    }
    return field.unescaped_key().get(key);
  }

  GPU_ADMISSION_ALWAYS_INLINE bool is_null(od::value& v, const Loc& at, bool& null) {
    null = false;
    if (first_char(v) != 'n') return true;
    // The atom is checked: "nul" or "nullx" is not null.
    if (auto code = v.is_null().get(null)) return fail(at, code);
    return null || fail_invalid(at, "not a valid value");
  }
  GPU_ADMISSION_ALWAYS_INLINE bool as_object(od::value& v, od::object& out, const Loc& at) {
    if (first_char(v) != '{') return fail(at, "must be an object");
    if (auto code = v.get_object().get(out)) return fail(at, code);
    return true;
  }
  GPU_ADMISSION_ALWAYS_INLINE bool as_array(od::value& v, od::array& out, const Loc& at) {
    if (first_char(v) != '[') return fail(at, "must be a list");
    if (auto code = v.get_array().get(out)) return fail(at, code);
    return true;
  }
  GPU_ADMISSION_ALWAYS_INLINE bool as_string(od::value& v, std::string_view& out, const Loc& at) {
    const std::string_view token = v.raw_json_token();
    if (token[0] != '"') return fail(at, "must be a string");
    // Without an escape the string is its bytes (stage 1 checked them as UTF-8): a view of the
    // input. With one, simdjson unescapes it into the parser.
    const char* end = quote_or_backslash(token.data() + 1);
    if (*end == '"') {
      out = std::string_view(token.data() + 1, static_cast<size_t>(end - token.data() - 1));
      return true;
    }
    if (auto code = v.get_string().get(out)) return fail(at, code);
    return true;
  }
  GPU_ADMISSION_ALWAYS_INLINE bool as_bool(od::value& v, bool& out, const Loc& at) {
    const char c = first_char(v);
    if (c != 't' && c != 'f') return fail(at, "must be true or false");
    if (auto code = v.get_bool().get(out)) return fail(at, code);
    return true;
  }
  // A string when the value is one, else nothing (and no error): for fields whose other types
  // the API server refuses and that are read as absent here.
  GPU_ADMISSION_ALWAYS_INLINE bool string_if_string(od::value& v, std::string_view& out, const Loc& at) {
    return first_char(v) != '"' || as_string(v, out, at);
  }
  // A string value's JSON text between its quotes, escapes left as sent: its type is checked but
  // its bytes are not read (stage 1 checked them as UTF-8 and found the closing quote).
  GPU_ADMISSION_ALWAYS_INLINE bool undecoded_string(od::value& v, std::string_view& out, const Loc& at) {
    std::string_view token = v.raw_json_token();  // to the next structural: trailing blanks included
    if (token[0] != '"') return fail(at, "must be a string");
    while (token.size() > 2 && token.back() != '"') token.remove_suffix(1);
    if (token.size() < 2 || token.back() != '"') return fail_invalid(at, "not a valid string");
    out = token.substr(1, token.size() - 2);
    return true;
  }
  // A map of strings (labels, annotations, nodeSelector) appended to `out`; repeated keys refused.
  // With `decode_value`, only the values of keys it accepts are decoded, the others are kept
  // undecoded (undecoded_string).
  bool string_map(od::value& v, StringViewPairs& out, const Loc& at, bool (*decode_value)(std::string_view) = nullptr);
  // Requires the keys key(items[i]) of the `count` entries just read from the map at `at` to be
  // distinct. Small maps, nearly all of them, compare each pair where they lie; large ones (100,000
  // labels is a valid body) are sorted on a copy of their keys (first_repeated).
  template <typename T, typename Key>
  bool unique_keys(const T* items, size_t count, Key&& key, const Loc& at) {
    if (count <= kPairwiseKeys) {
      for (size_t i = 1; i < count; ++i)
        for (size_t j = 0; j < i; ++j)
          if (key(items[i]) == key(items[j])) return duplicate(at, key(items[i]));
      return true;
    }
    // A copy of the keys in an arena on the stack (only maps of more than kPairwiseKeys get here;
    // 100,000 labels spill to the heap for this call only).
    std::array<std::byte, 4096> bytes;
    std::pmr::monotonic_buffer_resource scratch(bytes.data(), bytes.size());
    std::pmr::vector<std::string_view> names(&scratch);
    names.reserve(count);
    for (size_t i = 0; i < count; ++i) names.push_back(key(items[i]));
    if (auto repeated = first_repeated(names)) return duplicate(at, *repeated);
    return true;
  }
  static constexpr size_t kPairwiseKeys = 16;

};

// An On-Demand document over `json`, which must be followed by SIMDJSON_PADDING readable bytes
// when `padded` is true; otherwise it is copied into `copy` first.
simdjson::simdjson_result<od::document> iterate(od::parser& parser, std::string_view json, bool padded,
                                                std::string& copy);

}  // namespace gpu_admission::policy::json
