#include "sandbox/docker/image_inputs.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include <openssl/evp.h>

#include "base/hash.h"

namespace forge::sandbox::docker {
namespace {

namespace fs = std::filesystem;

// Bumped when what the hash covers, or how an image is made from it, changes.
constexpr const char* kRecipe = "forge-image-inputs-v1";

struct DigestDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

Result<std::string> FileSha256Hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot be read");
  std::unique_ptr<EVP_MD_CTX, DigestDeleter> ctx(EVP_MD_CTX_new());
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    EVP_DigestUpdate(ctx.get(), buffer, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return Status::Unavailable(path + ": read failed");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &size);
  return Hex(std::string_view(reinterpret_cast<const char*>(digest), size));
}

bool ByPath(const InputFile& a, const InputFile& b) { return a.path < b.path; }

// One line per entry; paths and symlink targets may hold any byte but NUL
// and newline is not special in them, so each field is length-prefixed.
void Append(std::string& out, const InputFile& f) {
  out += std::to_string(f.path.size()) + ':' + f.path + ' ' + f.type + ' ' + std::to_string(f.mode & 07777) + ' ' +
         std::to_string(f.content.size()) + ':' + f.content + '\n';
}

}  // namespace

Result<std::vector<InputFile>> ListInputs(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound(dir + ": not a directory");
  std::vector<InputFile> files;
  fs::path root = fs::path(dir).lexically_normal();
  if (!root.has_filename() && root.has_relative_path()) root = root.parent_path();  // "ctx/" -> "ctx"
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& path = it->path();
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) return Status::NotFound(path.string() + ": cannot be read");
    InputFile f;
    f.path = path.lexically_relative(root).generic_string();  // a symlink's own name, never its target's
    f.mode = st.st_mode & 07777;
    if (S_ISLNK(st.st_mode)) {
      f.type = 'l';
      f.content = fs::read_symlink(path, ec).string();
    } else if (S_ISDIR(st.st_mode)) {
      f.type = 'd';
    } else if (S_ISREG(st.st_mode)) {
      auto hash = FileSha256Hex(path.string());
      if (!hash.ok()) return hash.status();
      f.content = *hash;
    } else {
      continue;
    }
    files.push_back(std::move(f));
  }
  if (ec) return Status::NotFound(dir + ": " + ec.message());
  std::sort(files.begin(), files.end(), ByPath);
  return files;
}

std::string ImageInputHash(std::vector<InputFile> context, const std::string& layer_dest,
                           std::vector<InputFile> layer) {
  std::sort(context.begin(), context.end(), ByPath);
  std::sort(layer.begin(), layer.end(), ByPath);
  std::string text = std::string(kRecipe) + "\ncontext " + std::to_string(context.size()) + "\n";
  for (const auto& f : context) Append(text, f);
  if (!layer_dest.empty()) {
    text += "layer " + HarnessLayerDockerfile("BASE", layer_dest) + std::to_string(layer.size()) + "\n";
    for (const auto& f : layer) Append(text, f);
  }
  return Sha256Hex(text);
}

Result<std::string> ImageInputHashOf(const std::string& context_dir, const HarnessLayer* layer) {
  auto context = ListInputs(context_dir);
  if (!context.ok()) return context.status();
  if (layer == nullptr) return ImageInputHash(std::move(*context), "", {});
  auto harness = ListInputs(layer->source_dir);
  if (!harness.ok()) return harness.status().Prefixed("the harness layer");
  return ImageInputHash(std::move(*context), layer->dest, std::move(*harness));
}

std::string HarnessLayerDockerfile(const std::string& base, const std::string& dest) {
  return "FROM " + base + "\nCOPY harnesses/ " + dest + "/\n";
}

}  // namespace forge::sandbox::docker
