// The policy file's schema, declared once: for each mapping of the policy (the document, spec,
// spec.pools[], ...) a table of its fields. An entry says the field's name, what kind of value it
// holds, where it lives in PolicyConfig (a reader and a writer generated from a member pointer by
// schema_kinds.h, or a custom pair for fields with their own checks), whether it is required,
// whether `policy show` leaves it out when empty, and what the reference says about it. The
// loader reads by walking the tables, `policy show` writes by walking them, "unknown field"
// errors and accepted_policy_fields() list them, and docs/policy-reference.md's field tables are
// generated from them. Adding a field is adding an entry (and its PolicyConfig member).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policy/base/json.h"
#include "policy/config/field_reader.h"

namespace gpu_admission::policy {

// What a field holds, for the reference's type column and for tests.
enum class FieldKind : uint8_t { String, StringList, StringMap, Count, Bool, Enum, Mapping, MappingList, Custom };

// Flags of a field.
enum FieldFlag : uint8_t {
  kRequired = 1,      // left out: "missing required field"
  kNullIsAbsent = 2,  // null reads as if the field were left out
  kReadLast = 4,      // read after the fields without this flag (keeps the loader's error order)
  kWriteLast = 8,     // written after the fields without this flag (keeps `policy show`'s order)
  kOmitEmpty = 16,    // `policy show` leaves it out when empty ("", [] or {}); unset values always are
};

struct Mapping;

// What the reference says about a field: its type, its default, and what it does. An empty
// default_text (only outside list items) is rendered from what `policy show` prints for a policy
// that leaves the field out, so the reference cannot drift from PolicyConfig's defaults.
struct FieldDoc {
  std::string_view type;
  std::string_view default_text;
  std::string_view description;
};

// Reads the value `v` at `path` into the object the mapping reads into (PolicyConfig, PoolConfig, ...).
using FieldReadFn = void (*)(FieldReader& r, const Json& v, const std::string& path, void* object);
// The field's value as `policy show` writes it; null: left out.
using FieldWriteFn = Json (*)(const void* object);
// A check across fields of one mapping, run at its place in the table (no field of its own).
using MappingCheckFn = void (*)(FieldReader& r, const Json& mapping, const std::string& path, void* object);

struct Field {
  std::string_view name;  // "" for a check entry
  FieldKind kind = FieldKind::Custom;
  uint8_t flags = 0;
  FieldReadFn read = nullptr;
  FieldWriteFn write = nullptr;
  const Mapping* fields = nullptr;   // a mapping's (or each list item's) own table
  FieldDoc doc;                      // the reference's columns
  std::string_view missing_hint;     // appended to "missing required field" (" (the pod template paths)")
  MappingCheckFn check = nullptr;    // set on check entries only

  bool has(FieldFlag f) const { return (flags & f) != 0; }
};

// One mapping: its path (`[]` for any item of a list; "" for the document) and its fields in the
// order "unknown field" errors list them and `policy show` writes them.
struct Mapping {
  std::string_view path;
  std::span<const Field> fields;
  bool required_first = false;  // every "missing required field" before any field is read
};

// The document's table; every other mapping hangs under it.
const Mapping& policy_document_schema();

// Every mapping whose keys the loader checks, parents before children.
std::vector<const Mapping*> policy_mappings();

// The table of the mapping at `path` ("spec.pools[]"); nullptr when there is none.
const Mapping* find_mapping(std::string_view path);

// Reads the fields of the mapping `v` (already known to be a JSON object) at `path` into `object`:
// unknown fields, then each entry in order (kReadLast ones after the others).
void read_mapping(FieldReader& r, const Json& v, const std::string& path, const Mapping& m, void* object);

// `object` written as the mapping `m` (kWriteLast entries after the others).
Json write_mapping(const Mapping& m, const void* object);

}  // namespace gpu_admission::policy
