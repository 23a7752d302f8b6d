// The readers and writers of the schema's common field kinds (policy_schema.h), generated from a
// member pointer given as a template argument: `string_field<&PoolConfig::gpu_model>("gpuModel",
// ...)` makes the entry that reads a string into pool.gpu_model and writes it back. Only the
// files that declare the tables include this.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/config/policy_schema.h"

namespace gpu_admission::policy::schema {

template <class M>
struct MemberOf;
template <class C, class T>
struct MemberOf<T C::*> {
  using Class = C;
  using Type = T;
};

// The member `Member` of the type-erased object the mapping reads into.
template <auto Member>
auto& member(void* object) {
  return static_cast<typename MemberOf<decltype(Member)>::Class*>(object)->*Member;
}
template <auto Member>
const auto& member(const void* object) {
  return static_cast<const typename MemberOf<decltype(Member)>::Class*>(object)->*Member;
}

inline Json pairs_json(const StringPairs& ps) {
  Json out = Json::object();
  for (const auto& [k, v] : ps) out[k] = v;
  return out;
}

template <auto Member, bool NonEmpty>
void read_string(FieldReader& r, const Json& v, const std::string& p, void* o) {
  r.read_string(v, p, member<Member>(o), !NonEmpty);
}
template <auto Member>
void read_string_list(FieldReader& r, const Json& v, const std::string& p, void* o) {
  r.read_string_list(v, p, member<Member>(o));
}
template <auto Member>
void read_string_map(FieldReader& r, const Json& v, const std::string& p, void* o) {
  r.read_string_map(v, p, member<Member>(o));
}
template <auto Member>
void read_count(FieldReader& r, const Json& v, const std::string& p, void* o) {
  r.read_count(v, p, member<Member>(o));
}
template <auto Member, const auto& Names>
void read_enum(FieldReader& r, const Json& v, const std::string& p, void* o) {
  r.read_enum(v, p, Names, member<Member>(o));
}
// An optional enum: set only when the value is one of the names.
template <auto Member, const auto& Names>
void read_optional_enum(FieldReader& r, const Json& v, const std::string& p, void* o) {
  typename MemberOf<decltype(Member)>::Type::value_type value{};
  if (r.read_enum(v, p, Names, value)) member<Member>(o) = value;
}

template <auto Member>
Json write_value(const void* o) {
  return Json(member<Member>(o));
}
template <auto Member>
Json write_pairs(const void* o) {
  return pairs_json(member<Member>(o));
}
template <auto Member>
Json write_optional(const void* o) {
  const auto& v = member<Member>(o);
  return v ? Json(*v) : Json();
}
template <auto Member, const auto& Names>
Json write_enum(const void* o) {
  return std::string(Names[static_cast<size_t>(member<Member>(o))]);
}
template <auto Member, const auto& Names>
Json write_optional_enum(const void* o) {
  const auto& v = member<Member>(o);
  return v ? Json(std::string(Names[static_cast<size_t>(*v)])) : Json();
}

// A mapping whose fields live in the same object as its parent's (spec.exemptions in
// PolicyConfig, spec.pools[].mig in PoolConfig): null is left out.
template <const Mapping& Sub>
void read_section(FieldReader& r, const Json& v, const std::string& p, void* o) {
  if (v.is_null() || !r.expect_object(v, p)) return;
  read_mapping(r, v, p, Sub, o);
}
template <const Mapping& Sub>
Json write_section(const void* o) {
  return write_mapping(Sub, o);
}

// A list of mappings, each read into a new item (kept even when it has errors, as before).
template <auto Member, const Mapping& Item, const char* What>
void read_list(FieldReader& r, const Json& v, const std::string& p, void* o) {
  if (v.is_null()) return;
  if (!v.is_array()) {
    r.error(p, std::string("must be a list of ") + What + ", got " + type_name(v));
    return;
  }
  auto& out = member<Member>(o);
  for (size_t i = 0; i < v.size(); ++i) {
    typename MemberOf<decltype(Member)>::Type::value_type item;
    const std::string ip = index_path(p, i);
    if (r.expect_object(v[i], ip)) read_mapping(r, v[i], ip, Item, &item);
    out.push_back(std::move(item));
  }
}
template <auto Member, const Mapping& Item>
Json write_list(const void* o) {
  Json out = Json::array();
  for (const auto& item : member<Member>(o)) out.push_back(write_mapping(Item, &item));
  return out;
}

// An entry; the helpers below fill it for each kind.
constexpr Field entry(std::string_view name, FieldKind kind, uint8_t flags, FieldReadFn read, FieldWriteFn write,
                      const Mapping* sub, FieldDoc doc) {
  Field f;
  f.name = name;
  f.kind = kind;
  f.flags = flags;
  f.read = read;
  f.write = write;
  f.fields = sub;
  f.doc = doc;
  return f;
}

// Entries of the common kinds.
template <auto Member, bool NonEmpty = false>
constexpr Field string_field(std::string_view name, FieldDoc doc, uint8_t flags = 0) {
  return entry(name, FieldKind::String, flags, read_string<Member, NonEmpty>, write_value<Member>, nullptr, doc);
}
template <auto Member>
constexpr Field string_list_field(std::string_view name, FieldDoc doc, uint8_t flags = 0) {
  return entry(name, FieldKind::StringList, flags, read_string_list<Member>, write_value<Member>, nullptr, doc);
}
template <auto Member>
constexpr Field string_map_field(std::string_view name, FieldDoc doc, uint8_t flags = 0) {
  return entry(name, FieldKind::StringMap, flags, read_string_map<Member>, write_pairs<Member>, nullptr, doc);
}
template <auto Member>
constexpr Field count_field(std::string_view name, FieldDoc doc, uint8_t flags = 0) {
  return entry(name, FieldKind::Count, flags, read_count<Member>, write_optional<Member>, nullptr, doc);
}
template <auto Member, const auto& Names>
constexpr Field enum_field(std::string_view name, FieldDoc doc, uint8_t flags = 0) {
  return entry(name, FieldKind::Enum, flags, read_enum<Member, Names>, write_enum<Member, Names>, nullptr, doc);
}
template <auto Member, const auto& Names>
constexpr Field optional_enum_field(std::string_view name, FieldDoc doc, uint8_t flags = 0) {
  return entry(name, FieldKind::Enum, flags, read_optional_enum<Member, Names>, write_optional_enum<Member, Names>,
          nullptr, doc);
}
template <const Mapping& Sub>
constexpr Field section_field(std::string_view name, FieldDoc doc, uint8_t flags = 0) {
  return entry(name, FieldKind::Mapping, flags, read_section<Sub>, write_section<Sub>, &Sub, doc);
}
template <auto Member, const Mapping& Item, const char* What>
constexpr Field list_field(std::string_view name, FieldDoc doc, uint8_t flags = 0) {
  return entry(name, FieldKind::MappingList, flags, read_list<Member, Item, What>, write_list<Member, Item>, &Item,
               doc);
}
// A field with its own reader and writer; `sub`: its items' table, when they are mappings.
constexpr Field custom_field(std::string_view name, FieldReadFn read, FieldWriteFn write, FieldDoc doc,
                             uint8_t flags = 0, const Mapping* sub = nullptr, FieldKind kind = FieldKind::Custom) {
  return entry(name, kind, flags, read, write, sub, doc);
}
// A field read by its parent's custom reader (its items' table lists it for "unknown field"
// errors and the reference), or accepted and ignored (metadata.labels).
constexpr Field named_field(std::string_view name, FieldKind kind, FieldDoc doc, uint8_t flags = 0,
                            const Mapping* sub = nullptr) {
  return entry(name, kind, flags, nullptr, nullptr, sub, doc);
}
constexpr Field check_entry(MappingCheckFn check) {
  Field f;
  f.check = check;
  return f;
}
constexpr Field required(Field f, std::string_view hint = {}) {
  f.flags |= kRequired;
  f.missing_hint = hint;
  return f;
}

}  // namespace gpu_admission::policy::schema
