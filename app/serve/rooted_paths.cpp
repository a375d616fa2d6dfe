#include "rooted_paths.h"

#include <filesystem>

namespace organ::api {
namespace fs = std::filesystem;
namespace {

bool within(const std::string& root, const std::string& path) {
    return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                            (root == "/" || path[root.size()] == '/'));
}

} // namespace

RootedPaths::RootedPaths(const std::string& root) {
    std::error_code ec;
    const fs::path canonical = fs::canonical(root, ec);
    if (ec || !fs::is_directory(canonical, ec)) {
        throw ApiError{500, "the root '" + root + "' is not a folder"};
    }
    m_root = canonical.string();
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
    if (given.is_absolute()) {
        if (!within(m_root, given.lexically_normal().string())) {
            throw ApiError{403, "'" + std::string(path) + "' is outside the served folder"};
        }
        return given.lexically_normal().string();
    }
    return (fs::path(m_root) / given).lexically_normal().string();
}

std::string RootedPaths::input(std::string_view path) const {
    const std::string joined = checked(path);
    std::error_code ec;
    const fs::path canonical = fs::canonical(joined, ec);
    if (ec) {
        throw ApiError{404, "'" + std::string(path) + "' does not exist"};
    }
    if (!within(m_root, canonical.string())) {
        throw ApiError{403, "'" + std::string(path) + "' leads outside the served folder (a symbolic link)"};
    }
    return canonical.string();
}

std::string RootedPaths::output(std::string_view path) const {
    const fs::path joined = checked(path);
    if (!joined.has_filename() || joined.string() == m_root) {
        throw ApiError{400, "'" + std::string(path) + "' names no file"};
    }
    std::error_code ec;
    const fs::path folder = fs::canonical(joined.parent_path(), ec);
    if (ec || !fs::is_directory(folder, ec)) {
        throw ApiError{404, "the folder of '" + std::string(path) + "' does not exist"};
    }
    if (!within(m_root, folder.string())) {
        throw ApiError{403, "'" + std::string(path) + "' leads outside the served folder (a symbolic link)"};
    }
    const fs::path target = folder / joined.filename();
    if (fs::exists(fs::symlink_status(target, ec))) {
        throw ApiError{409, "'" + std::string(path) + "' exists: the API never writes over a file"};
    }
    return target.string();
}

bool RootedPaths::contains(const std::string& path) const {
    std::error_code ec;
    const fs::path canonical = fs::canonical(path, ec);
    return !ec && within(m_root, canonical.string());
}

std::string RootedPaths::relative(const std::string& absolute) const {
    const std::string r = fs::path(absolute).lexically_relative(m_root).string();
    return r.empty() ? absolute : r;
}

} // namespace organ::api
