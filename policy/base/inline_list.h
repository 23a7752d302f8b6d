// A list that keeps its first N entries in place and allocates only past them: for the short
// lists built once per evaluation (the pools a pod names), so that the common request does not
// touch the heap. Append-only; copyable; iterates as a plain array.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace gpu_admission::policy {

template <typename T, size_t N>
class InlineList {
 public:
  void push_back(const T& value) {
    if (heap_.empty() && size_ < N) {
      inline_[size_++] = value;
      return;
    }
    if (heap_.empty()) heap_.assign(inline_.begin(), inline_.end());
    heap_.push_back(value);
    ++size_;
  }
  const T* begin() const { return heap_.empty() ? inline_.data() : heap_.data(); }
  const T* end() const { return begin() + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& front() const { return *begin(); }
  const T& back() const { return begin()[size_ - 1]; }
  const T& operator[](size_t i) const { return begin()[i]; }

 private:
  std::array<T, N> inline_{};
  std::vector<T> heap_;  // all entries, once there are more than N
  size_t size_ = 0;
};

}  // namespace gpu_admission::policy
