// The image a container was made from, read from its layers on the host
// (the overlay's lower directories, top first): what the image itself has,
// whatever the agent later changed in the container.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "verify/inside.h"

namespace forge::verify {

class ImageLayers {
 public:
  explicit ImageLayers(const std::vector<std::string>& layer_dirs);
  // A live file system as the image: root ("/" inside a pod) as its one
  // layer, where only a file whose change time is before changed_before_ns
  // (t0) is the image's or the environment's.
  ImageLayers(const std::string& root, int64_t changed_before_ns);

  // path exists in the image: the topmost layer that has an entry for it
  // decides (an overlay whiteout there means the image deleted it).
  bool Has(const std::string& path);
  // A command of that name in a standard bin directory of the image.
  bool HasCommand(const std::string& name);
  // A top-level Python module or package of that name in one of the
  // image's Python directories: those under /usr/lib, /usr/local/lib and
  // /opt (lib/pythonX.Y, its site-packages and dist-packages,
  // lib/python3/dist-packages) and any directory added with AddPythonRoot.
  bool HasModule(const std::string& name);
  void AddPythonRoot(const std::string& dir);
  // The site-packages or dist-packages directory a file of the image's own
  // Python (its path) is under, as the interpreter uses it; none: nothing.
  void AddPythonRootOf(const std::string& path);

 private:
  void FindPythonRoots();
  const std::set<std::string>& NamesIn(size_t layer, const std::string& dir);

  std::vector<inside::Fd> layers_;
  int64_t changed_before_ns_ = 0;  // 0: the layers are the image's as they are
  std::set<std::string> python_roots_;
  bool roots_found_ = false;
  std::map<std::pair<size_t, std::string>, std::set<std::string>> names_;
};

}  // namespace forge::verify
