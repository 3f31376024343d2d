/*
 * hami.h - HAMi's own device configuration (the device-config.yaml of the
 * hami-scheduler-device ConfigMap) read as device families
 * (docs/behaviour.md §2.3).
 *
 * The file is one YAML mapping of vendor sections, read as HAMi reads it
 * (go-yaml into its Go structs): a key left out has Go's zero value, and
 * keys the webhook does not use are ignored whatever they hold.  Each
 * section that names both a count and a memory resource makes one family
 * in the form of an entry of the config's `devices`:
 *
 *   nvidia                  "nvidia": the five resource names,
 *                           defaultGPUNum, defaultMemory, defaultCores,
 *                           overwriteEnv, runtimeClassName, gpuCorePolicy,
 *                           and the tolerations the caller gives
 *   cambricon, hygon,       "cambricon", ...: resourceCountName,
 *   mthreads, amd           resourceMemoryName, resourceCoreName
 *   metax                   "metax": resourceVCountName,
 *                           resourceVMemoryName, resourceVCoreName (sGPU)
 *   kunlun                  "kunlun": resourceVCountName,
 *                           resourceVMemoryName (vXPU)
 *   enflame                 "enflame": resourceNameDRSGCU,
 *                           resourceNameGCUMemory, resourceNameGCUCore
 *   iluvatars[i]            its commonWord (else chipName):
 *                           resourceCountName, resourceMemoryName
 *   vnpus.configs[i]        its commonWord (else chipName): resourceName,
 *   (or vnpus[i])           resourceMemoryName, resourceCoreName,
 *                           runtimeClassName
 *
 * A family made from a vendor section has defaultGPUNum, defaultMemory
 * and defaultCores 0 and no tolerations.  Sections with a count alone
 * (awsneuron, vastai, biren, metax's and kunlun's whole-device names) make
 * none.
 */
#ifndef HAMI_H
#define HAMI_H

#include <stddef.h>

#include <jansson.h>

#include "compiler.h"

/*
 * Reads the YAML data[0..len) of the file path (named in messages only)
 * as above.  Returns a new JSON array of families, in the order of the
 * table above (nvidia first), each an object with every key of a family
 * of `devices`; nvidia_tolerations (borrowed, an array) goes into the
 * nvidia family.  Returns NULL with one message in err[0..errlen) that
 * names the file and the key by its path ("hami-device-config F:
 * nvidia.defaultMemory: expected an integer, got a string \"lots\""), and
 * the line and column of a YAML syntax error.  A file that makes no
 * family is refused.
 */
json_t *hami_devices(const char *path, const char *data, size_t len,
		     const json_t *nvidia_tolerations, char *err,
		     size_t errlen) COMPILER_WUR;

#endif /* HAMI_H */
