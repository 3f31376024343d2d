/*
 * error.c - messages of the library's error codes.
 */
#include "vgpu.h"

const char *vgpu_strerror(int code)
{
	switch (code) {
#define VGPU_CASE_(name, value, message)                                      \
	case value:                                                           \
		return message;
		VGPU_ERRORS(VGPU_CASE_)
#undef VGPU_CASE_
	}
	return "unknown error";
}
