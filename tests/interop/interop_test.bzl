"""interop_test: one end-to-end sh_test of tests/interop."""

def interop_test(name, tools, src = None, data = [], tags = []):
    """An sh_test running SRC (NAME.sh by default) with interop_lib.sh.

    Args:
      name: the test's name.
      tools: labels whose paths are the script's arguments, in order.
      src: the script, when it is not NAME.sh.
      data: further runfiles the script reads.
      tags: Bazel tags (the browser tests run alone, unsandboxed).
    """
    native.sh_test(
        name = name,
        size = "medium",
        srcs = [src or name + ".sh"],
        args = ["$(location %s)" % tool for tool in tools],
        data = ["interop_lib.sh"] + tools + data,
        tags = tags,
    )
