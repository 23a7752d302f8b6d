#include <cstdio>

#include "policy/mutations/mutation.h"

namespace gpu_admission::policy {

PodPatcher::PodPatcher(PodView& pod, Patch& patch) : pod_(pod), patch_(patch), base_(pod_json_pointer(pod)) {}

std::string PodPatcher::pod_path(std::string_view rest) const {
  std::string out(base_);
  out += rest;
  return out;
}

void PodPatcher::add(std::string path, std::string value_json) {
  patch_.push_back({PatchOp::Kind::Add, std::move(path), std::move(value_json)});
}

void PodPatcher::ensure_metadata() {
  if (pod_.has_metadata) return;
  add(pod_path("/metadata"), "{}");
  pod_.has_metadata = true;
}

void PodPatcher::add_label(std::string_view key, std::string_view value) {
  ensure_metadata();
  if (!pod_.has_labels) {
    add(pod_path("/metadata/labels"), "{}");
    pod_.has_labels = true;
  }
  std::string path = pod_path("/metadata/labels/");
  append_pointer_token(path, key);
  std::string json;
  append_json_string(json, value);
  add(std::move(path), std::move(json));
  pod_.labels.emplace_back(key, value);
}

void PodPatcher::set_annotation(std::string_view key, std::string_view value) {
  ensure_metadata();
  if (!pod_.has_annotations) {
    add(pod_path("/metadata/annotations"), "{}");
    pod_.has_annotations = true;
  }
  std::string path = pod_path("/metadata/annotations/");
  append_pointer_token(path, key);
  std::string json;
  append_json_string(json, value);
  add(std::move(path), std::move(json));
}

void PodPatcher::add_node_selector(std::string_view key, std::string_view value) {
  if (!pod_.has_spec) {
    add(pod_path("/spec"), "{}");
    pod_.has_spec = true;
  }
  if (!pod_.has_node_selector) {
    add(pod_path("/spec/nodeSelector"), "{}");
    pod_.has_node_selector = true;
  }
  std::string path = pod_path("/spec/nodeSelector/");
  append_pointer_token(path, key);
  std::string json;
  append_json_string(json, value);
  add(std::move(path), std::move(json));
  pod_.node_selector.emplace_back(key, value);
}

std::string PodPatcher::container_path(const ContainerView& c) const {
  std::string out = pod_path("/spec/");
  out += container_list_name(c.kind);
  out += '/';
  out += std::to_string(c.index);
  return out;
}

std::string PodPatcher::resource_list_path(const ContainerView& c, bool limits) const {
  return container_path(c) + (limits ? "/resources/limits/" : "/resources/requests/");
}

void PodPatcher::rename_resource(ContainerView& c, bool limits, ResourceQuantity& q, std::string_view new_name) {
  std::string list = resource_list_path(c, limits);
  std::string old_path = list;
  append_pointer_token(old_path, q.name);
  patch_.push_back({PatchOp::Kind::Remove, std::move(old_path), {}});
  std::string new_path = std::move(list);
  append_pointer_token(new_path, new_name);
  add(std::move(new_path), quantity_json(q));
  q.name = new_name;
}

void PodPatcher::merge_resource(ContainerView& c, bool limits, size_t index, ResourceQuantity& into, int64_t total) {
  auto& list = limits ? c.limits : c.requests;
  std::string path = resource_list_path(c, limits);
  std::string into_path = path;
  append_pointer_token(into_path, into.name);
  append_pointer_token(path, list[index].name);
  patch_.push_back({PatchOp::Kind::Remove, std::move(path), {}});
  std::string json;
  append_json_string(json, std::to_string(total));
  add(std::move(into_path), std::move(json));
  into.form = ResourceQuantity::Form::Integer;  // `into` moves with its element below
  into.integer = total;
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(index));
}

void PodPatcher::add_env(ContainerView& c, std::string_view name, std::string_view value) {
  std::string entry = "{\"name\":";
  append_json_string(entry, name);
  entry += ",\"value\":";
  append_json_string(entry, value);
  entry += '}';
  if (c.has_env) {
    add(container_path(c) + "/env/-", std::move(entry));
  } else {
    add(container_path(c) + "/env", "[" + entry + "]");
    c.has_env = true;
  }
  c.env.push_back({name, value, false});
}

std::string quantity_json(const ResourceQuantity& q) {
  switch (q.form) {
    case ResourceQuantity::Form::String: {
      std::string out;
      append_json_string(out, q.text);
      return out;
    }
    case ResourceQuantity::Form::Integer: return std::to_string(q.integer);
    case ResourceQuantity::Form::Float: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", q.number);
      return buf;
    }
  }
  return "0";
}

}  // namespace gpu_admission::policy
