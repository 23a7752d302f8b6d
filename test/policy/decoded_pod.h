// A pod decoded from JSON text by the pod decoder, for tests of what the decoder reads: the text,
// the document and the view it points into live together.
#pragma once

#include <optional>
#include <string>

#include "policy/decoding/pod_decoder.h"

struct DecodedPod {
  gpu_admission::policy::PodDocument document;
  gpu_admission::policy::PodView view;
  std::string text;
  std::optional<gpu_admission::policy::DecodeError> error;
  explicit DecodedPod(std::string json) : text(std::move(json)) {
    error = gpu_admission::policy::decode_pod_json(text, false, view, document);
  }
};
