#include <charconv>
#include <cstdio>

#include "policy/evaluation/mutations/mutation.h"

namespace gpu_admission::policy {
namespace {

void append_integer(std::string& out, int64_t value) {
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, res.ptr);
}

std::string_view resource_list(bool limits) {
  return limits ? "/resources/limits/" : "/resources/requests/";
}

// A template that is a pod's spec (PodView::template_is_spec) has no metadata of its own: its pods'
// labels and annotations come from the template it overrides, so what the mutations write there
// reaches the view (rules see the pod as mutated) but no patch operation.
bool outside_spec_template(const PodView& pod, std::string_view rest) {
  return pod.template_is_spec && rest.starts_with("/metadata");
}

}  // namespace

PodPatcher::PodPatcher(PodView& pod, Patch& patch) : pod_(pod), patch_(patch), base_(pod_json_pointer(pod)) {}

void PodPatcher::append_pod_path(std::string& out, std::string_view rest, std::string_view key) const {
  if (pod_.template_is_spec && rest.starts_with("/spec")) rest.remove_prefix(5);  // the template is the spec
  out += base_;
  out += rest;
  append_pointer_token(out, key);
}

void PodPatcher::append_container_path(std::string& out, const ContainerView& c, std::string_view rest,
                                       std::string_view key) const {
  out += base_;
  out += pod_.template_is_spec ? "/" : "/spec/";
  out += container_list_name(c.kind);
  out += '/';
  append_integer(out, static_cast<int64_t>(c.index));
  out += rest;
  append_pointer_token(out, key);
}

void PodPatcher::add_object(std::string_view rest) {
  if (outside_spec_template(pod_, rest)) return;
  patch_.add([&](std::string& out) { append_pod_path(out, rest); }, [](std::string& out) { out += "{}"; });
}

void PodPatcher::add_string(std::string_view map, std::string_view key, std::string_view value) {
  if (outside_spec_template(pod_, map)) return;
  patch_.add([&](std::string& out) { append_pod_path(out, map, key); },
             [&](std::string& out) { append_json_string(out, value); });
}

void PodPatcher::ensure_metadata() {
  if (pod_.has_metadata) return;
  add_object("/metadata");
  pod_.has_metadata = true;
}

void PodPatcher::add_label(std::string_view key, std::string_view value) {
  ensure_metadata();
  if (!pod_.has_labels) {
    add_object("/metadata/labels");
    pod_.has_labels = true;
  }
  add_string("/metadata/labels/", key, value);
  pod_.labels.emplace_back(key, value);
}

void PodPatcher::set_annotation(std::string_view key, std::string_view value) {
  ensure_metadata();
  if (!pod_.has_annotations) {
    add_object("/metadata/annotations");
    pod_.has_annotations = true;
  }
  add_string("/metadata/annotations/", key, value);
}

void PodPatcher::add_node_selector(std::string_view key, std::string_view value) {
  if (!pod_.has_spec) {
    add_object("/spec");
    pod_.has_spec = true;
  }
  if (!pod_.has_node_selector) {
    add_object("/spec/nodeSelector");
    pod_.has_node_selector = true;
  }
  add_string("/spec/nodeSelector/", key, value);
  pod_.node_selector.emplace_back(key, value);
}

void PodPatcher::rename_resource(ContainerView& c, bool limits, ResourceQuantity& q, std::string_view new_name) {
  patch_.remove([&](std::string& out) { append_container_path(out, c, resource_list(limits), q.name); });
  patch_.add([&](std::string& out) { append_container_path(out, c, resource_list(limits), new_name); },
             [&](std::string& out) { append_quantity_json(out, q); });
  q.name = new_name;
}

void PodPatcher::merge_resource(ContainerView& c, bool limits, size_t index, ResourceQuantity& into, int64_t total) {
  auto& list = limits ? c.limits : c.requests;
  patch_.remove([&](std::string& out) { append_container_path(out, c, resource_list(limits), list[index].name); });
  patch_.add([&](std::string& out) { append_container_path(out, c, resource_list(limits), into.name); },
             [&](std::string& out) {
               out += '"';  // the sum as a quantity string: digits need no escaping
               append_integer(out, total);
               out += '"';
             });
  into.form = ResourceQuantity::Form::Integer;  // `into` moves with its element below
  into.integer = total;
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(index));
}

void PodPatcher::add_env(ContainerView& c, std::string_view name, std::string_view value) {
  const bool new_list = !c.has_env;  // then the whole list is added, else appended to
  patch_.add([&](std::string& out) { append_container_path(out, c, new_list ? "/env" : "/env/-"); },
             [&](std::string& out) {
               if (new_list) out += '[';
               out += "{\"name\":";
               append_json_string(out, name);
               out += ",\"value\":";
               append_json_string(out, value);
               out += '}';
               if (new_list) out += ']';
             });
  c.has_env = true;
  c.env.push_back({c.env_size++, name, value, false});
}

void append_quantity_json(std::string& out, const ResourceQuantity& q) {
  switch (q.form) {
    case ResourceQuantity::Form::String: append_json_string(out, q.text); return;
    case ResourceQuantity::Form::Integer: append_integer(out, q.integer); return;
    case ResourceQuantity::Form::Float: {
      char buf[32];
      const int n = std::snprintf(buf, sizeof buf, "%.17g", q.number);
      out.append(buf, static_cast<size_t>(n));
      return;
    }
  }
  out += '0';
}

std::string quantity_json(const ResourceQuantity& q) {
  std::string out;
  append_quantity_json(out, q);
  return out;
}

}  // namespace gpu_admission::policy
