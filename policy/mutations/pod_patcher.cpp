#include <cstdio>

#include "policy/mutations/mutation.h"

namespace gpu_admission::policy {

PodPatcher::PodPatcher(PodView& pod, Patch& patch) : pod_(pod), patch_(patch), base_(workload_pod_pointer(pod.workload)) {}

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

void PodPatcher::rename_resource(ContainerView& c, bool limits, ResourceQuantity& q, std::string_view new_name) {
  std::string list = pod_path("/spec/");
  list += container_list_name(c.kind);
  list += '/';
  list += std::to_string(c.index);
  list += limits ? "/resources/limits/" : "/resources/requests/";
  std::string old_path = list;
  append_pointer_token(old_path, q.name);
  patch_.push_back({PatchOp::Kind::Remove, std::move(old_path), {}});
  std::string new_path = std::move(list);
  append_pointer_token(new_path, new_name);
  add(std::move(new_path), quantity_json(q));
  q.name = new_name;
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
