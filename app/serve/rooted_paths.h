#pragma once

#include <string>
#include <string_view>

namespace organ::api {

// An answer other than success: the HTTP status and a message for the client.
struct ApiError {
    int status = 400;
    std::string message;
};

// Every path a client names is resolved inside the served root: relative to it, or absolute
// and inside it; no ".." component, no NUL; and after every symbolic link is followed, still
// inside it. Outputs go into an existing folder inside the root, under a name that does not
// exist yet: never over anything, inputs included.
class RootedPaths {
public:
    // Throws ApiError 500 when `root` is not a folder.
    explicit RootedPaths(const std::string& root);
    const std::string& root() const { return m_root; }

    // An existing file or folder: 400 (malformed), 403 (outside the root), 404 (absent).
    std::string input(std::string_view path) const;
    // A new file or folder: 400, 403, 404 (its folder is absent), 409 (it exists).
    std::string output(std::string_view path) const;
    // Whether an absolute path of a file that was opened lies inside the root once its links are
    // followed (a split part or an organ file reached through a model).
    bool contains(const std::string& path) const;
    // `absolute` relative to the root, for answers ("." for the root itself).
    std::string relative(const std::string& absolute) const;

private:
    std::string checked(std::string_view path) const; // the lexical checks, root-joined
    std::string m_root;                               // canonical, without a trailing '/'
};

} // namespace organ::api
