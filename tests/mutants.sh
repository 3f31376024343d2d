#!/bin/bash
# tests/mutants.sh - source mutations that the fast tier must kill.
#
#   tests/mutants.sh [NAME...]      every mutant, or those whose name starts
#                                   with one of the NAMEs
#
# Each mutant below is one small change of the source (a perl -0 s{}{}
# over one file: sed over the whole file, newlines included) that breaks a
# rule of docs/behaviour.md.  Each is applied to a copy of the tree in
# build/mutants/ (the built objects copied along, so that only the changed
# file is built again) and the fast tier runs against it: the unit program
# named with the mutant first, then `make unit`, then `make fixtures`.
# The first failure kills the mutant.  The script fails, naming them, when
# a mutant survives, when it does not build, or when its change matches
# nothing (the source moved on: update the list).
#
# Run by `make mutants` (part of `make test`), which builds the tree first;
# the unmutated tree must pass the fast tier (`make check`).  MUTANTS_JOBS
# (default 2) mutants run at a time.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=build
OUT=$BUILD/mutants
JOBS=${MUTANTS_JOBS:-2}

# --- the mutants ----------------------------------------------------------
#
# One a line: NAME @@ FILE @@ PERL-SUBSTITUTION @@ FIRST, the unit program
# (or "fixtures") expected to kill it, which runs before the rest.

# Each key of the config dropped from copying into a profile's config: its
# row marked as the top level's own (CFGKEY_OWN, which cfgkey_copy() skips).
copy_drops() {
	local key field
	while read -r key field; do
		printf 'copy-%s @@ webhook/config.c @@ s{(\\(%s\\),\\s*\\.where = )}{${1}CFGKEY_OWN | } @@ test_config\n' \
			"$key" "$field"
	done <<'EOF'
schedulerName scheduler_name
forceOverwriteDefaultScheduler force_overwrite_default_scheduler
privilegedPolicy privileged_policy
nodeNamePolicy node_name_policy
schedulerPolicy.node node_scheduler_policy
schedulerPolicy.gpu gpu_scheduler_policy
guards.schedulerAnnotations.policy guards\.annotation_policy
guards.schedulerAnnotations.keys guards\.keys
guards.schedulerAnnotations.writers guards\.writers
guards.env.policy guards\.env_policy
guards.env.names guards\.names
guards.env.allowedValues guards\.allowed
guards.volumeMounts.policy guards\.mount_policy
guards.volumeMounts.paths guards\.mount_paths
devices.name name
devices.resourceCountName resource\[VGPU_COUNT\]
devices.resourceMemoryName resource\[VGPU_MEMORY\]
devices.resourceMemoryPercentageName resource\[VGPU_MEMORY_PERCENTAGE\]
devices.resourceCoreName resource\[VGPU_CORES\]
devices.resourcePriorityName resource\[VGPU_PRIORITY\]
devices.defaultGPUNum family\.default_gpu_num
devices.defaultMemory family\.default_memory
devices.defaultCores family\.default_cores
devices.tolerations tolerations
devices.runtimeClassName runtime_class_name
devices.gpuCorePolicy gpu_core_policy
devices.activeOOMKiller active_oom_killer
devices.overwriteEnv overwrite_env
EOF
	echo 'copy-devices @@ webhook/config.c @@ s{(&families, \.where = )}{${1}CFGKEY_OWN | } @@ test_config'
}

mutants() {
	copy_drops
	cat <<'EOF'
guard-annotations-deny-is-warn @@ webhook/guard.c @@ s{(nul\)\)\n\t\t\tpolicy = GUARD_POLICY_DENY;\n\t\tif \(policy == )GUARD_POLICY_DENY}{${1}GUARD_POLICY_WARN} @@ test_guard
guard-env-deny-is-warn @@ webhook/guard.c @@ s{(!run->can_patch\)\n\t\tpolicy = GUARD_POLICY_DENY;\n\tif \(policy == )GUARD_POLICY_DENY}{${1}GUARD_POLICY_WARN} @@ test_guard
guard-mounts-deny-is-warn @@ webhook/guard.c @@ s{run->g->mount_policy == GUARD_POLICY_DENY}{run->g->mount_policy != GUARD_POLICY_DENY} @@ test_guard
guard-annotations-strip-is-deny @@ webhook/guard.c @@ s{\(!run->can_patch \|\| nul\)}{(1)} @@ fixtures
guard-env-strip-is-deny @@ webhook/guard.c @@ s{policy == GUARD_POLICY_STRIP && !run->can_patch}{policy == GUARD_POLICY_STRIP} @@ test_guard
guard-annotations-writers-ignored @@ webhook/guard.c @@ s{n && run->update && guardcfg_is_writer}{0 && guardcfg_is_writer} @@ test_guard
ephemeral-strip-is-deny @@ webhook/policy.c @@ s{\(op == POLICY_CREATE \|\| op == POLICY_EPHEMERAL\)}{(op == POLICY_CREATE)} @@ test_guard
validate-strips @@ webhook/policy.c @@ s{run->can_patch = !p->req->validate &&}{run->can_patch =} @@ test_guard
profile-namespace-inverted @@ webhook/config.c @@ s{pattern_set_findn\(&p->namespaces, ns, nslen\) < 0}{pattern_set_findn(&p->namespaces, ns, nslen) >= 0} @@ test_config
profile-labels-inverted @@ webhook/config.c @@ s{if \(j == p->nlabels\)}{if (j != p->nlabels)} @@ test_config
profile-labels-of-new-object-on-update @@ webhook/review.c @@ s{op == POLICY_CREATE \? object :}{op != POLICY_BINDING ? object :} @@ test_review
profile-podlabels-rule-off @@ webhook/cfgkey.c @@ s{(case CFGKEY_READ_PROFILE:.*?)if \(r->labels && }{${1}if (0 && }s @@ test_config
profile-family-podlabels-rule-off @@ webhook/cfgkey.c @@ s{(case CFGKEY_READ_PROFILE_FAMILY:.*?)if \(r->labels && }{${1}if (0 && }s @@ test_config
profile-keys-after-devices-refused @@ webhook/config.c @@ s{r->skip = skip; /\*}{r->skip = NULL; /*} @@ test_config
family-required-keys-optional @@ webhook/config.c @@ s{\(key->where & CFGKEY_REQUIRED\) &&}{0 &&} @@ test_config
family-names-may-repeat @@ webhook/config.c @@ s{if \(!strcmp\(d->name, o->name\)\)}{if (0)} @@ test_config
type-bool-not-copied @@ webhook/cfgkey.c @@ s{\*\(bool \*\)cfgkey_field\(k, dst\) = \*\(const bool \*\)cfgkey_field\(k, src\);}{(void)dst;} @@ test_config
overwrite-env-ignored @@ webhook/config.c @@ s{\|= cfg->devices\[i\]\.overwrite_env;}{|= false;} @@ test_config
privileged-deny-is-warn @@ webhook/policy.c @@ s{if \(cfg->privileged_policy == CONFIG_POLICY_DENY\)}{if (cfg->privileged_policy != CONFIG_POLICY_DENY)} @@ fixtures
node-name-deny-is-warn @@ webhook/policy.c @@ s{if \(cfg->node_name_policy == CONFIG_POLICY_DENY\)}{if (cfg->node_name_policy != CONFIG_POLICY_DENY)} @@ test_review
default-scheduler-always-taken @@ webhook/policy.c @@ s{p->cfg->force_overwrite_default_scheduler\)}{1)} @@ fixtures
toleration-added-twice @@ webhook/mutate.c @@ s{if \(toleration_listed\(pod->tolerations, t\) \|\|}{if (0 &&} @@ test_policy
watch-same-bytes-reload @@ webhook/watch.c @@ s{if \(!strcmp\(sha, w->sha256\)\) \{}{if (0) \{} @@ test_watch
watch-no-debounce @@ webhook/watch.c @@ s{(w->have_pending = true;)\n\t\t\treturn WATCH_SAME;}{${1}} @@ test_watch
watch-refused-bytes-retried @@ webhook/watch.c @@ s{if \(!strcmp\(sha, w->refused\) && !retry\)}{if (0)} @@ test_watch
watch-frees-held-values @@ webhook/watch.c @@ s{atomic_load\(&w->superseded->refs\) == 0}{atomic_load(&w->superseded->refs) >= 0} @@ test_watch
tplpath-star-first-member-only @@ webhook/tplpath.c @@ s{rc = member\(w, &s, key, strlen\(key\), val\);\n\t\tif \(rc\)\n\t\t\treturn rc;}{return member(w, \&s, key, strlen(key), val);} @@ test_tplpath
volcano-scheduler-not-inherited @@ webhook/manifest.c @@ s{o.inherit = json_is_string\(t\)}{o.inherit = NULL \&\& json_is_string(t)} @@ fixtures
unknown-kind-not-scanned @@ webhook/manifest.c @@ s{if \(!cw && !w\) \{\n\t\tcheck_unknown\(&o\);}{if (!cw \&\& !w) \{} @@ fixtures
krm-results-repeated @@ webhook/manifest.c @@ s{if \(has_result\(o->r->old_results, res\) \|\|}{if (0 \&\& has_result(o->r->old_results, res) ||} @@ fixtures
EOF
}

# --- one mutant -----------------------------------------------------------

# Runs mutant number $1 in its own copy; writes one line into
# $OUT/results/N: "killed NAME by WHAT", "survived NAME", or "error NAME:
# WHY".
run_one() {
	local n=$1 line name file expr unit dir log rev date
	line=$(mutants | sed -n "${n}p")
	name=${line%% @@ *}; line=${line#* @@ }
	file=${line%% @@ *}; line=${line#* @@ }
	expr=${line%% @@ *}; unit=${line##* @@ }
	dir=$OUT/m$n
	log=$OUT/logs/$name.log
	read -r rev date <"$BUILD/version.stamp"
	rm -rf "$dir"
	cp -a "$OUT/base" "$dir"
	result() {
		echo "$1" >"$OUT/results/$n"
		[ "${1%% *}" = killed ] && rm -rf "$dir"
		return 0
	}
	mk() {
		make -C "$dir" --no-print-directory WERROR=0 \
			VGPU_REVISION="$rev" VGPU_BUILD_DATE="$date" \
			FIXTURES_JOBS=1 "$@"
	}
	if ! perl -0pi -e "$expr" "$dir/$file" 2>"$log" ||
	    cmp -s "$OUT/base/$file" "$dir/$file"; then
		result "error $name: the change matches nothing in $file"
		return
	fi
	if [ "$unit" = fixtures ]; then
		first=build/vgpu-webhook
	else
		first=build/tests/$unit
	fi
	if ! mk "$first" >>"$log" 2>&1; then
		result "error $name: does not build (see $log)"
		return
	fi
	if [ "$unit" = fixtures ]; then
		! mk fixtures >>"$log" 2>&1
	else
		! (cd "$dir" && "build/tests/$unit") >>"$log" 2>&1
	fi && { result "killed $name by $unit"; return; }
	if ! mk unit >>"$log" 2>&1; then
		result "killed $name by make unit"
	elif [ "$unit" != fixtures ] && ! mk fixtures >>"$log" 2>&1; then
		result "killed $name by make fixtures"
	else
		result "survived $name (see $log)"
	fi
}

if [ "${1:-}" = --one ]; then
	run_one "$2"
	exit 0
fi

# --- all of them ----------------------------------------------------------

start=$(date +%s)
total=$(mutants | wc -l)
picked=()
for n in $(seq 1 "$total"); do
	name=$(mutants | sed -n "${n}p")
	name=${name%% @@ *}
	if [ $# -eq 0 ]; then
		picked+=("$n")
		continue
	fi
	for want in "$@"; do
		case $name in "$want"*) picked+=("$n"); break ;; esac
	done
done
[ ${#picked[@]} -gt 0 ] || { echo "mutants: none named $*"; exit 1; }

# The tree as it is (tracked files and new ones git does not ignore) and
# its built objects: each mutant starts from a copy of this.
rm -rf "$OUT"
mkdir -p "$OUT/base/$BUILD" "$OUT/results" "$OUT/logs"
git ls-files -co --exclude-standard -z |
	while IFS= read -r -d '' f; do
		[ -e "$f" ] && printf '%s\0' "$f"
	done | xargs -0 cp -a --parents -t "$OUT/base"
for f in lib webhook tests fixtures manifests libvgpu.a libwebhook.a \
	vgpu-webhook version.stamp; do
	[ -e "$BUILD/$f" ] && cp -a "$BUILD/$f" "$OUT/base/$BUILD/"
done
ln -s "$ROOT/$BUILD/mhd" "$OUT/base/$BUILD/mhd"

# The programs that the mutants name first must pass on the tree itself,
# or every mutant would look killed.
for unit in $(mutants | sed 's/.* @@ //' | grep -v '^fixtures$' | sort -u); do
	if ! (cd "$OUT/base" && "$BUILD/tests/$unit") >"$OUT/logs/base-$unit.log" 2>&1; then
		echo "mutants: $unit fails on the tree itself (see $OUT/logs/base-$unit.log)"
		exit 1
	fi
done

echo "mutants: ${#picked[@]} mutants, $JOBS at a time"
printf '%s\n' "${picked[@]}" | xargs -P "$JOBS" -I{} "$0" --one {}

status=0
killed=0
for n in "${picked[@]}"; do
	r=$(cat "$OUT/results/$n" 2>/dev/null || echo "error mutant $n: no result")
	case $r in
	killed*) killed=$((killed + 1)) ;;
	*) echo "mutants: $r"; status=1 ;;
	esac
done
echo "mutants: $killed of ${#picked[@]} killed in $(($(date +%s) - start)) s"
[ $status -eq 0 ] && rm -rf "$OUT/base"
exit $status
