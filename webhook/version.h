/*
 * version.h - what this build is: the release (VGPU_VERSION of lib/vgpu.h),
 * the source revision and the build date, fixed when the binary is built.
 */
#ifndef VERSION_H
#define VERSION_H

/* The release, "0.1.0". */
const char *version_release(void);

/*
 * The source revision: the commit's 12-digit abbreviated hash, with
 * "-dirty" when the tree had changes, or "unknown" outside a git checkout
 * (make VGPU_REVISION=... sets it).
 */
const char *version_revision(void);

/*
 * The build date, RFC 3339 in UTC ("2026-11-25T21:00:00Z"): that of
 * SOURCE_DATE_EPOCH when set, else the commit's date, so that two builds
 * of one commit are identical; the time of the build outside git.
 */
const char *version_build_date(void);

#endif /* VERSION_H */
