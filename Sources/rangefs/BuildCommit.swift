// The commit this binary was built from, when its build recorded one. scripts/package.sh writes
// it into BuildStamp.generated.swift (git-ignored) and builds with `-D RANGEFS_BUILD_STAMP`; any
// other build says it has none, even if a generated file from an earlier package build is still
// lying next to this one.
#if RANGEFS_BUILD_STAMP
let buildCommit: String? = BuildStamp.commit
#else
let buildCommit: String? = nil
#endif
