#pragma once

#include "support/rooted_files.h"

#include <memory>
#include <string>
#include <string_view>

namespace organ::api {

// An answer other than success: the HTTP status and a message for the client.
struct ApiError {
    int status = 400;
    std::string message;
};

// A new name in a folder of the root, the folder held open (see RootedPaths::output).
struct OutputTarget {
    RootedPath path;   // beneath the folder's descriptor; path.path is its absolute name
    std::string claim; // the folder (device and inode) and the name: one job writes it at a time
};

// Every path a client names is followed beneath the served root by its descriptor (FileRoot):
// relative to it, or absolute and inside it; no ".." component, no NUL, and no symbolic link at
// any component, inside the root or out (a link can be swapped for another while it is
// followed). Every read and write of a request goes through these paths, so that renaming
// folders in the root while requests run never leads one outside it. Outputs go into an existing
// folder of the root, under a name that does not exist yet: never over anything, inputs included.
class RootedPaths {
public:
    // Throws ApiError 500 when `root` is not a folder.
    explicit RootedPaths(const std::string& root);
    const std::shared_ptr<const FileRoot>& root() const { return m_root; }

    // An existing file or folder: 400 (malformed), 403 (outside the root or through a link), 404
    // (absent). Opening it may still fail (it may change meanwhile), never outside the root.
    RootedPath input(std::string_view path) const;
    // A new name: 400, 403, 404 (its folder is absent), 409 (it exists). The folder is opened
    // here, once: whatever is renamed afterwards, the output is written into that folder.
    OutputTarget output(std::string_view path) const;

private:
    std::string checked(std::string_view path) const; // the lexical checks: the path beneath the root
    std::shared_ptr<const FileRoot> m_root;
};

} // namespace organ::api
