#include "verify/image_layers.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>

namespace forge::verify {
namespace {

constexpr std::array<const char*, 6> kBinDirs = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                                 "/usr/bin",        "/sbin",          "/bin"};

// Opens path inside a layer as if the layer were the root: a symlink in the
// layer (merged /usr's /bin -> usr/bin) resolves within it.
inside::Fd OpenInLayer(int layer, const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::string relative = path;
  while (!relative.empty() && relative[0] == '/') relative.erase(0, 1);
  if (relative.empty()) relative = ".";
  return inside::Fd(static_cast<int>(syscall(SYS_openat2, layer, relative.c_str(), &how, sizeof how)));
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string Name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

bool IsWhiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == 0; }

}  // namespace

ImageLayers::ImageLayers(const std::vector<std::string>& layer_dirs) {
  for (const auto& dir : layer_dirs) layers_.emplace_back(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
}

ImageLayers::ImageLayers(const std::string& root, int64_t changed_before_ns) : changed_before_ns_(changed_before_ns) {
  layers_.emplace_back(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
}

bool ImageLayers::Has(const std::string& path) {
  for (const auto& layer : layers_) {
    if (!layer.ok()) continue;
    inside::Fd parent = OpenInLayer(layer.get(), Parent(path), O_PATH | O_DIRECTORY);
    if (!parent.ok()) continue;
    struct stat st{};
    if (fstatat(parent.get(), Name(path).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (changed_before_ns_ != 0) return inside::CtimeNs(st) < changed_before_ns_;
    return !IsWhiteout(st);
  }
  return false;
}

bool ImageLayers::HasCommand(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) return false;
  for (const char* dir : kBinDirs) {
    if (Has(std::string(dir) + "/" + name)) return true;
  }
  return false;
}

void ImageLayers::AddPythonRoot(const std::string& dir) { python_roots_.insert(dir); }

void ImageLayers::AddPythonRootOf(const std::string& path) {
  for (const std::string_view site : {"/site-packages/", "/dist-packages/"}) {
    if (size_t at = path.find(site); at != std::string::npos) AddPythonRoot(path.substr(0, at + site.size() - 1));
  }
}

void ImageLayers::FindPythonRoots() {
  roots_found_ = true;
  for (const char* lib : {"/usr/lib", "/usr/local/lib", "/opt/conda/lib"}) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      for (const std::string& name : NamesIn(i, lib)) {
        if (name.rfind("python", 0) != 0) continue;
        const std::string base = std::string(lib) + "/" + name;
        python_roots_.insert(base);
        for (const char* site : {"/site-packages", "/dist-packages", "/lib-dynload"}) python_roots_.insert(base + site);
      }
    }
  }
}

const std::set<std::string>& ImageLayers::NamesIn(size_t layer, const std::string& dir) {
  auto [it, fresh] = names_.try_emplace({layer, dir});
  if (!fresh || !layers_[layer].ok()) return it->second;
  inside::Fd fd = OpenInLayer(layers_[layer].get(), dir, O_RDONLY | O_DIRECTORY);
  if (!fd.ok()) return it->second;
  DIR* listing = fdopendir(fd.release());
  if (listing == nullptr) return it->second;
  while (dirent* entry = readdir(listing)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    it->second.insert(name);
  }
  closedir(listing);
  return it->second;
}

bool ImageLayers::HasModule(const std::string& name) {
  if (name.empty()) return false;
  if (!roots_found_) FindPythonRoots();
  for (const std::string& root : python_roots_) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      const auto& names = NamesIn(i, root);
      if (names.empty()) continue;
      // name (a package), name.py, name.pyc, name.cpython-311-x86_64-linux-gnu.so, ...
      auto it = names.lower_bound(name);
      for (; it != names.end() && it->compare(0, name.size(), name) == 0; ++it) {
        if (it->size() == name.size() || (*it)[name.size()] == '.') {
          if (Has(root + "/" + *it)) return true;
        }
      }
    }
  }
  return false;
}

}  // namespace forge::verify
