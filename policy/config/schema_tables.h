// The schema's tables that policy_schema.cpp (the document and spec) and
// policy_schema_items.cpp (the items of spec's lists) share; see policy_schema.h.
#pragma once

#include "policy/config/policy_schema.h"

namespace gpu_admission::policy::schema {

extern const Mapping kPoolItem;               // spec.pools[]
extern const Mapping kTenantItem;             // spec.tenants[]
extern const Mapping kWorkloadItem;           // spec.workloads[]
extern const Mapping kExceptionItem;          // spec.exceptions[]
extern const Mapping kDeviceTolerationItem;   // spec.deviceTolerations[]
extern const Mapping kDefaultsTaintItem;      // spec.defaults.gpuTaints[]

// The names of a table's fields, for FieldReader::check_fields.
std::vector<std::string_view> field_names(const Mapping& m);

// A list of taints (read_taints' rules) whose items are `item`'s fields.
void read_taints(FieldReader& r, const Json& v, const std::string& path, const Mapping& item,
                 std::vector<TaintConfig>& out);
Json taints_json(const std::vector<TaintConfig>& ts);

}  // namespace gpu_admission::policy::schema
