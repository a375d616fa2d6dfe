#include "rooted_paths.h"

#include "support/errors.h"
#include "support/text_format.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace organ::api {
namespace fs = std::filesystem;
namespace {

// Opens `relative` beneath `root` only to say why it cannot be used: the status and message of
// the answer. The open that counts comes after it, beneath the root again.
void probe(const FileRoot& root, const std::string& relative, int flags, const std::string& shown) {
    const UniqueFd fd(root.openFile(relative, flags));
    if (fd.valid()) {
        return;
    }
    switch (errno) {
    case ELOOP:
        throw ApiError{403, shown + " leads through a symbolic link; none is followed in the served folder"};
    case EXDEV:
        throw ApiError{403, shown + " is outside the served folder"};
    case ENOENT:
    case ENOTDIR:
        throw ApiError{404, shown + " does not exist"};
    default:
        throw ApiError{403, shown + ": " + std::strerror(errno)};
    }
}

} // namespace

RootedPaths::RootedPaths(const std::string& root) {
    std::error_code ec;
    const fs::path canonical = fs::canonical(root, ec);
    if (ec || !fs::is_directory(canonical, ec)) {
        throw ApiError{500, "the root '" + root + "' is not a folder"};
    }
    try {
        m_root = FileRoot::open(canonical.string());
    } catch (const IoError& error) {
        throw ApiError{500, error.what()};
    }
}

std::string RootedPaths::checked(std::string_view path) const {
    if (path.empty()) {
        throw ApiError{400, "the path is empty"};
    }
    if (path.find('\0') != std::string_view::npos) {
        throw ApiError{400, "the path contains a NUL character"};
    }
    const fs::path given{std::string(path)};
    for (const auto& part : given) {
        if (part == "..") {
            throw ApiError{403, "'" + std::string(path) + "': '..' is not allowed in a path"};
        }
    }
    const auto beneath = m_root->beneath(given.lexically_normal().string());
    if (!beneath) {
        throw ApiError{403, "'" + std::string(path) + "' is outside the served folder"};
    }
    return *beneath;
}

RootedPath RootedPaths::input(std::string_view path) const {
    const std::string relative = checked(path);
    probe(*m_root, relative, O_PATH, "'" + std::string(path) + "'");
    return relative == "." ? RootedPath(m_root, m_root->path()) : m_root->file(relative);
}

OutputTarget RootedPaths::output(std::string_view path) const {
    const std::string relative = checked(path);
    const std::string name = fileLabel(relative);
    if (path.back() == '/' || relative == "." || name == ".") {
        throw ApiError{400, "'" + std::string(path) + "' names no file"};
    }
    const std::string folderPath = folderOf(relative);
    probe(*m_root, folderPath, O_PATH | O_DIRECTORY, "the folder of '" + std::string(path) + "'");
    std::shared_ptr<const FileRoot> folder;
    try {
        folder = m_root->folder(folderPath);
    } catch (const IoError& error) {
        throw ApiError{403, error.what()};
    }
    struct stat st {};
    if (::fstatat(folder->descriptor(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        throw ApiError{409, "'" + std::string(path) + "' exists: the API never writes over a file"};
    }
    if (::fstat(folder->descriptor(), &st) != 0) {
        throw ApiError{500, "the folder of '" + std::string(path) + "': " + std::strerror(errno)};
    }
    return {folder->file(name), std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + "/" + name};
}

} // namespace organ::api
