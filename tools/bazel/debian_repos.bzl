"""Repository rules that expose Debian-packaged Bazel rule sets offline.

Bazel 4.2.3 would otherwise download rules_cc, rules_java, platforms and
remote_coverage_tools. Each rule here checks that the Debian package is
installed and fails with one line naming it when it is not.
"""

def missing_package(package, what):
    """Fails the fetch with the one-line hint users need."""
    fail("dpquic: missing Debian package '%s' (no %s): run tools/setup.sh" % (package, what))

def _symlink_tree(repository_ctx, src, skip = []):
    """Links every top-level entry of src into the repository root."""
    for entry in repository_ctx.path(src).readdir():
        if entry.basename in skip:
            continue
        repository_ctx.symlink(entry, entry.basename)

def _debian_local_repository_impl(repository_ctx):
    path = repository_ctx.attr.path
    if not repository_ctx.path(path).exists:
        missing_package(repository_ctx.attr.package, path)
    _symlink_tree(repository_ctx, path, skip = ["WORKSPACE", "WORKSPACE.bazel"])
    repository_ctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % repository_ctx.name)

debian_local_repository = repository_rule(
    implementation = _debian_local_repository_impl,
    attrs = {
        "path": attr.string(mandatory = True, doc = "Directory the package installs."),
        "package": attr.string(mandatory = True, doc = "Debian package providing it."),
    },
    local = True,
    doc = "A local_repository over a Debian package's directory, with a clear error when absent.",
)

# Bazel 4 has no use_cpp_toolchain(); the list below is its Bazel 4 spelling.
_BAZEL4_TOOLCHAINS = "[\"@bazel_tools//tools/cpp:toolchain_type\"]"

def _adapt_to_bazel4(text):
    text = text.replace(", \"use_cpp_toolchain\")", ")")
    return text.replace("use_cpp_toolchain()", _BAZEL4_TOOLCHAINS)

def _debian_rules_cc_impl(repository_ctx):
    root = "/usr/share/bazel/rules/cc"
    if not repository_ctx.path(root).exists:
        missing_package("bazel-rules-cc", root)
    adapted_dir = "cc/private/rules_impl"
    adapted = ["compiler_flag.bzl", "cc_flags_supplier.bzl"]
    _symlink_tree(repository_ctx, root, skip = ["WORKSPACE", "cc"])
    for entry in repository_ctx.path(root + "/cc").readdir():
        if entry.basename != "private":
            repository_ctx.symlink(entry, "cc/" + entry.basename)
    for entry in repository_ctx.path(root + "/cc/private").readdir():
        if entry.basename != "rules_impl":
            repository_ctx.symlink(entry, "cc/private/" + entry.basename)
    for entry in repository_ctx.path(root + "/" + adapted_dir).readdir():
        target = adapted_dir + "/" + entry.basename
        if entry.basename in adapted:
            repository_ctx.file(target, _adapt_to_bazel4(repository_ctx.read(entry)))
        else:
            repository_ctx.symlink(entry, target)
    repository_ctx.file("WORKSPACE", "workspace(name = \"rules_cc\")\n")

debian_rules_cc = repository_rule(
    implementation = _debian_rules_cc_impl,
    local = True,
    doc = "Debian's rules_cc with the two files that need Bazel 5 rewritten for Bazel 4.",
)

def _coverage_tools_impl(repository_ctx):
    repository_ctx.file("WORKSPACE", "workspace(name = \"remote_coverage_tools\")\n")
    repository_ctx.file("BUILD.bazel", """\
# `bazel test` only needs these labels to exist; coverage is not collected offline.
filegroup(
    name = "coverage_report_generator",
    srcs = [],
    visibility = ["//visibility:public"],
)

filegroup(
    name = "lcov_merger",
    srcs = [],
    visibility = ["//visibility:public"],
)
""")

local_coverage_tools = repository_rule(
    implementation = _coverage_tools_impl,
    doc = "Stands in for remote_coverage_tools so tests never fetch it.",
)
