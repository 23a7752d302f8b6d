"""The values random_pods.py draws from: namespaces, GPU quantities in many spellings, MIG
profiles and counts, DRA device classes, host paths, env names, envFrom prefixes and mount paths.
"""


NAMESPACES = ["team-alpha", "alpha-dev", "alpha-ml", "team-beta", "beta-x", "research-ml", "gamma",
              "kube-system", "gpu-operator", "infra-ml", "default", "research", "gamma-2"]
NAMESPACE_WEIGHTS = [14, 6, 3, 12, 5, 4, 6, 2, 1, 1, 5, 3, 1]

GPU_QUANTITIES = ["1", 1, "2", 2, "3", 4, "0", 0, "500m", "999900u", "1e3", "1k", "1.5", "8",
                  "2000m", "0.5", 1.5, "3e0", "0m", "1e100", "8Ei", "2Ki", "1000000000n", "5",
                  "1.0", "+2", "0.1e1", "5e-1", "1E3", 2.0, "1000m", "0.0", "4", "1001m", "1n", "1u",
                  "0.000000001"]
GPU_QUANTITY_WEIGHTS = [20, 14, 8, 6, 3, 3, 5, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                        1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1]
MIG_PROFILES = ["1g.10gb", "1g.10gb.me", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.20gb",
                "1g.5gb", "3g.20gb", "2g.10gb", "7g.40gb", "1g.6gb", "2g.12gb", "4g.24gb",
                "2g.12gb.me", "5g.50gb", "1g.12gb", "big", "8g.96gb"]
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
# GPU classes of the default deviceClasses, a class that hands out no GPUs, a wrong spelling
DEVICE_CLASSES = ["gpu.nvidia.com", "vfio.gpu.nvidia.com", "mig.nvidia.com", "nic.example.com",
                  "GPU.nvidia.com"]
# Profiles of the newer tables (attributes included) and near misses: +me.all where the model has
# none, +me where the RTX PRO has only -me, a B200 profile on a GB200.
NEW_MIG_PROFILES = ["1g.24gb", "1g.24gb.gfx", "1g.24gb.me.all", "1g.24gb-me", "1g.24gb.me", "2g.48gb",
                    "2g.48gb.gfx", "2g.48gb.me.all", "2g.48gb-me", "2g.48gb.me", "4g.96gb", "4g.96gb.gfx",
                    "4g.96gb.me.all", "1g.34gb", "1g.34gb.me", "1g.34gb.me.all", "2g.67gb", "7g.269gb",
                    "1g.35gb.me", "1g.47gb", "1g.45gb", "3g.139gb", "1g.23gb.gfx"]
# Scheduler GPU shares by annotation (KAI, Run:ai) and near misses (prefixed, other case, .limit).
SHARING_ANNOTATIONS = ["gpu-fraction", "gpu-memory", "gpu-fraction-num-devices", "example.com/gpu-share",
                       "kai.scheduler/gpu-fraction", "run.ai/gpu-fraction", "GPU-Fraction", "gpu-fraction.limit",
                       "gpu-fractions"]
MIG_COUNTS = ["1", 1, "2", 3, "0", 7, 28, 29, "14", "500m", 10, 16, 17, "2.0", "1500m"]
HOST_PATHS = [
    # the SPEC list, in various spellings
    "/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-caps/nvidia-cap1",
    "/dev/../dev//nvidia0", "/dev/dri", "/dev/dri/card0", "/dev/vfio/", "/dev/char",
    "/var/run/nvidia-container-devices", "/run/nvidia-container-devices/x", "/run/nvidia",
    "/run/nvidia-persistenced/socket", "/var/run/nvidia/driver", "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet/device-plugins/kubelet.sock", "/var/lib/kubelet/plugins/gpu.nvidia.com",
    "/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/pod-resources/", "/etc/cdi",
    "/etc/cdi/nvidia.yaml", "/var/run/cdi", "/run/cdi", "/etc/nvidia-container-runtime/config.toml",
    "/etc/nvidia-container-toolkit", "/usr/local/nvidia/lib64", "/proc", "/proc/1/root",
    "/", "/dev", "/run", "/var", "/var/lib", "/var/lib/kubelet", "/etc", "/usr", "/usr/local",
    "/var/run", "/var/run/", "//", "/./dev", "/var/run/../etc/cdi", "/var/lib/../run/nvidia",
    "/usr/local/./nvidia", "dev/nvidia0", "/sys/bus/pci", "/sys", "/run/containerd/containerd.sock",
    "/var/run/docker.sock", "/dev/fd", "/tmp/../dev/dri", "/etc/./cdi/../cdi",
    # MPS pipe directories
    "/tmp/nvidia-mps", "/tmp/nvidia-mps/pipe", "/run/nvidia/mps", "/var/run/nvidia/mps/", "/tmp",
    # policy extras (relaxed policy)
    "/opt/gpu-tools", "/opt/gpu-tools/bin", "/home/kubernetes/bin/nvidia", "/home/kubernetes",
    # '..' and '.' tricks, resolved lexically (/var/run folded to /run as the walk meets it)
    "/var/run/..", "/var/lib/kubelet/..", "/dev/nvidia0/../../etc", "/run/nvidia-foo", "/dev/nvidiafoo",
    "/var/run/nvidia/mps/../../containerd", "/tmp/nvidia-mps/..", "/proc/..", "/etc/cdi/..",
    "/dev/dri/../shm", "/sys/../dev/shm", "/var/./run/./cdi/", "/usr/local/nvidia-foo", "/var/tmp/nvidia-mps",
    "/var/lib/kubelet/plugins/../pods", "/home/kubernetes/bin/../bin/nvidia/x", "/opt/gpu-tools/../data",
    "/run/../var/log", "///dev///char///x",
    # harmless neighbours
    "/dev/shm", "/etc/ssl/certs", "/usr/local/cuda", "/var/log", "/data", "/home/user", "/opt/nvidia",
    "/dev/nvme0n1", "/dev/dri2", "/etc/cdi-backup", "/var/lib/kubelet/pods", "/procfoo", "/system",
    "/run/user/1000", "/var/lib/docker-data", "/usr/lib/x86_64-linux-gnu", "/var/runx",
    "/opt/gpu-toolsx", "/tmp/nvidia-mpsx", "/var/lib/kubelet/plugins_registryx",
]
DEVICE_ENV = ["NVIDIA_VISIBLE_DEVICES", "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES",
              "NVIDIA_IMEX_CHANNELS", "NVIDIA_MOFED", "NVIDIA_NVSWITCH", "NVIDIA_GDS", "NVIDIA_GDRCOPY",
              "CUDA_DISABLE_CONTROL"]
HARMLESS_ENV = ["PATH", "NVIDIA_DRIVER_CAPABILITIES", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE",
                "NVIDIA_VISIBLE_DEVICES_X", "nvidia_visible_devices", "CUDA_MPS", "CUDA_MPSX",
                "MY_CUDA_MPS_PIPE", "NVIDIA_GDS_VERSION", "CUDA_DISABLE", "MY_NVIDIA_MOFED",
                "SITE_GPU_DEVICES_X", "HAMI_OF"]
ENVFROM_PREFIXES = [None, "", "APP_", "N", "NV", "NVIDIA_", "NVIDIA_VISIBLE_", "NVIDIA_VISIBLE_DEVICES",
                    "NVIDIA_IMEX_CHANNEL", "NVIDIA_MIG_", "NVIDIA_IMEX_CHANNELS", "C", "CUDA_",
                    "CUDA_MPS", "CUDA_MPS_", "CUDA_MPS_PIPE_", "CUDA_X", "nvidia_", "NVIDIA_GD",
                    "NVIDIA_GDS", "CUDA_DISABLE_CONTROL", "CUDA_D", "SITE_", "SITE_GPU_DEVICES", "H"]
# Container mount paths: the toolkit's device list in several spellings, and neighbours.
MOUNT_PATHS = ["/var/run/nvidia-container-devices/all", "/run/nvidia-container-devices",
               "/var/run/nvidia-container-devices", "/var/lib/../run//./nvidia-container-devices/GPU-0/",
               "/var/run/nvidia-container-devicesall", "/var/run/nvidia-container-devices/cdi/nvidia.com/gpu=all",
               "var/run/nvidia-container-devices/imex/0",
               "/var/run/nvidia-container-device", "/var/run/nvidia-container-devices/..",
               "/var/run/nvidia-container-devices/../secrets", "/data/nvidia-container-devices/all",
               "/var/run/secrets/kubernetes.io/serviceaccount", "/var/run", "/data", "/dev/shm"]
