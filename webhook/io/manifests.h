// Objects to evaluate offline, read from YAML or JSON files: multi-document streams, `kind: List`
// (and *List kinds), and AdmissionReview JSON (its request.object, with the request's namespace,
// operation and user).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policy/base/json.h"
#include "policy/base/source.h"

namespace gpu_admission::webhook {

struct ManifestObject {
  ManifestObject() = default;
  ManifestObject(Json object_in, std::string source_in) : object(std::move(object_in)), source(std::move(source_in)) {}

  Json object;
  std::string source;          // "file.yaml:12" (file and first line of the document)
  // From an AdmissionReview: the request's view of the object.
  bool from_review = false;
  std::string review_namespace;  // also set by `test` cases: the namespace the object is created in
  std::string review_operation;
  std::string review_username;
  std::string review_uid;
  Json review;                 // the whole AdmissionReview, judged as /validate judges it
};

struct ManifestRead {
  std::vector<ManifestObject> objects;
  std::optional<std::string> error;  // "file.yaml:3:7: invalid YAML: ..."
};

// `first_line`: the line of the file `text` starts at (one document of a stream read on its own,
// yaml_documents.h): sources and errors name the file's lines.
ManifestRead read_manifest_text(std::string_view text, const std::string& source_name, int first_line = 1);
ManifestRead read_manifest_file(const std::string& path);  // "-" = standard input

}  // namespace gpu_admission::webhook
