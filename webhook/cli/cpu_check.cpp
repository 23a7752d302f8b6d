// Refuses to start, with a clear message, on an x86 CPU without the instructions the binary was
// built for (x86-64-v3 and PCLMUL; see the top-level CMakeLists.txt), instead of dying of SIGILL
// somewhere later. Runs as an early constructor, before the other static initialisers; this file
// itself is compiled for baseline x86-64.
#include <cstdio>
#include <cstdlib>

namespace {

__attribute__((constructor(101))) void require_cpu_features() {
  __builtin_cpu_init();
  const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
                  __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("pclmul");
  if (ok) return;
  std::fputs(
      "gpu-admission: this CPU lacks instructions the binary was built for (x86-64-v3: AVX2, BMI1/2, FMA, "
      "and PCLMUL).\nRebuild with -DGPU_ADMISSION_X86_ARCH=OFF for any x86-64 CPU (JSON decoding is slower).\n",
      stderr);
  std::_Exit(70);
}

}  // namespace
