/*
 * version.c - the build's identity (version.h).  The Makefile defines
 * VGPU_REVISION and VGPU_BUILD_DATE for this file alone, so that a new
 * commit rebuilds one object.
 */
#include "version.h"
#include "vgpu.h"

#ifndef VGPU_REVISION
#define VGPU_REVISION "unknown"
#endif
#ifndef VGPU_BUILD_DATE
#define VGPU_BUILD_DATE "unknown"
#endif

const char *version_release(void)
{
	return VGPU_VERSION;
}

const char *version_revision(void)
{
	return VGPU_REVISION;
}

const char *version_build_date(void)
{
	return VGPU_BUILD_DATE;
}
