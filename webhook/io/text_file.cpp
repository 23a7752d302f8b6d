#include "webhook/io/text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace gpu_admission::webhook {

TextFile read_text_file(const std::string& path, size_t max_bytes) {
  TextFile out;
  FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) {
    out.error = std::string("cannot read: ") + std::strerror(errno);
    return out;
  }
  struct stat st {};
  if (path != "-" && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::fclose(f);
    out.error = "cannot read: is a directory";
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (out.text.size() + n > max_bytes) {
      out.error = "too large (more than " + std::to_string(max_bytes >> 20) + " MiB)";
      out.text.clear();
      break;
    }
    out.text.append(buf, n);
  }
  if (out.error.empty() && std::ferror(f)) out.error = std::string("cannot read: ") + std::strerror(errno);
  if (f != stdin) std::fclose(f);
  return out;
}

}  // namespace gpu_admission::webhook
