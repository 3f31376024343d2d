#!/bin/sh
# gen-certs.sh - a development CA and a serving certificate for vgpu-webhook,
# made with openssl.  See usage() below for the interface.
set -eu

prog=gen-certs.sh

usage() {
	cat <<EOF
usage: certs/gen-certs.sh [--service NAME] [--namespace NS] [--out DIR]
                          [--days N] [--key-type ec|rsa] [--client NAME]
                          [--force]

Makes a development CA and a serving certificate for the webhook Service,
and prints the CA bundle, base64-encoded for the webhook's caBundle field,
on standard output (one line; everything else goes to standard error).

  --service NAME    Service name (default vgpu-webhook)
  --namespace NS    its namespace (default vgpu-system)
  --out DIR         output folder (default: dev/ beside this script, that
                    is certs/dev of the repository, whatever the current
                    folder)
  --days N          validity of every certificate in days (default 365)
  --key-type T      ec (P-256, the default) or rsa (2048 bits)
  --client NAME     also issue a client certificate with common name NAME
                    (client.crt, client.key), for --tls-client-ca-file
  --force           overwrite files that already exist

Files written in DIR:
  ca.crt ca.key     the CA (keep ca.key private)
  tls.crt tls.key   serving certificate for --tls-cert-file and
                    --tls-private-key-file; its names are SERVICE,
                    SERVICE.NS, SERVICE.NS.svc, SERVICE.NS.svc.cluster.local,
                    localhost and 127.0.0.1; extended key usage serverAuth
  client.crt client.key  with --client: extended key usage clientAuth

Existing files are never overwritten without --force: the run stops before
writing anything.  With --client, without --force, and a DIR that already
holds ca.crt and ca.key, that CA is reused and only client.crt and client.key
are written.  Whenever a new CA is made, an older client.crt and client.key in
DIR are removed (the new CA did not sign them).  Keys get mode 0600.

These keys are for development and tests only.  Never commit them: the
default folder certs/dev/ is git-ignored; keep any other folder out of git
too.
EOF
}

log() {
	echo "$prog: $*" >&2
}

die() {
	echo "$prog: $*" >&2
	exit 2
}

# A DNS-1123 label: what a Service name and a namespace must be.
is_label() {
	printf '%s' "$1" | grep -Eqx '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?'
}

service=vgpu-webhook
namespace=vgpu-system
out=$(dirname "$0")/dev
days=365
key_type=ec
client=""
force=0

while [ $# -gt 0 ]; do
	arg=$1
	case $arg in
	--*=*)
		name=${arg%%=*}
		value=${arg#*=}
		shift
		set -- "$name" "$value" "$@"
		continue
		;;
	-h | --help)
		usage
		exit 0
		;;
	--force)
		force=1
		shift
		continue
		;;
	--service | --namespace | --out | --days | --key-type | --client)
		[ $# -ge 2 ] || die "a value is missing for $arg"
		value=$2
		shift 2
		;;
	*)
		usage >&2
		die "unknown argument: $arg"
		;;
	esac
	case $arg in
	--service) service=$value ;;
	--namespace) namespace=$value ;;
	--out) out=$value ;;
	--days) days=$value ;;
	--key-type) key_type=$value ;;
	--client) client=$value ;;
	esac
done

is_label "$service" || die "--service: \"$service\" is not a DNS-1123 label"
is_label "$namespace" ||
	die "--namespace: \"$namespace\" is not a DNS-1123 label"
[ -n "$out" ] || die "--out: empty folder name"
printf '%s' "$days" | grep -Eqx '[1-9][0-9]{0,4}' ||
	die "--days: \"$days\" is not a whole number from 1 to 99999"
case $key_type in
ec | rsa) ;;
*) die "--key-type: \"$key_type\" is not ec or rsa" ;;
esac
if [ -n "$client" ]; then
	printf '%s' "$client" | grep -Eqx '[A-Za-z0-9][-A-Za-z0-9_.@:]{0,63}' ||
		die "--client: \"$client\" must be 1 to 64 letters, digits or -_.@: (starting with a letter or digit)"
fi
command -v openssl >/dev/null 2>&1 || die "openssl is needed"

# What this run writes.
reuse_ca=0
if [ -n "$client" ] && [ $force -eq 0 ] && [ -f "$out/ca.crt" ] &&
	[ -f "$out/ca.key" ]; then
	reuse_ca=1
	targets="client.crt client.key"
else
	targets="ca.crt ca.key tls.crt tls.key"
	[ -z "$client" ] || targets="$targets client.crt client.key"
fi
if [ $force -eq 0 ]; then
	for f in $targets; do
		[ ! -e "$out/$f" ] ||
			die "$out/$f exists; use --force to overwrite, or another --out"
	done
fi

umask 077
mkdir -p "$out"
work=$(mktemp -d "$out/.gen-certs.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# new_key FILE: a fresh private key (PKCS#8 PEM).
new_key() {
	if [ "$key_type" = ec ]; then
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
			-out "$1" 2>/dev/null
	else
		openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
			-out "$1" 2>/dev/null
	fi
}

# A leaf's key usage: RSA key exchange in TLS 1.2 also needs
# keyEncipherment.
if [ "$key_type" = ec ]; then
	leaf_ku="critical, digitalSignature"
else
	leaf_ku="critical, digitalSignature, keyEncipherment"
fi

# sign NAME SUBJECT EXTFILE: issues $work/NAME.crt for $work/NAME.key from
# the CA in $work.
sign() {
	openssl req -new -key "$work/$1.key" -subj "$2" -out "$work/$1.csr" \
		2>/dev/null
	openssl x509 -req -in "$work/$1.csr" -CA "$work/ca.crt" \
		-CAkey "$work/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
		-days "$days" -sha256 -extfile "$3" -out "$work/$1.crt" \
		2>/dev/null
	rm -f "$work/$1.csr"
}

if [ $reuse_ca -eq 1 ]; then
	log "reusing the CA in $out"
	cp "$out/ca.crt" "$out/ca.key" "$work/"
else
	log "making a development CA in $out ($key_type keys, $days days)"
	new_key "$work/ca.key"
	openssl req -x509 -new -key "$work/ca.key" -sha256 -days "$days" \
		-subj "/CN=$service development CA" \
		-set_serial "0x$(openssl rand -hex 16)" \
		-addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-addext "subjectKeyIdentifier=hash" \
		-out "$work/ca.crt" 2>/dev/null

	fqdn=$service.$namespace.svc
	log "issuing the serving certificate for $fqdn"
	cat >"$work/tls.ext" <<EOF
basicConstraints = critical, CA:FALSE
keyUsage = $leaf_ku
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = DNS:$service, DNS:$service.$namespace, DNS:$fqdn, DNS:$fqdn.cluster.local, DNS:localhost, IP:127.0.0.1
EOF
	new_key "$work/tls.key"
	sign tls "/CN=$fqdn" "$work/tls.ext"
	rm -f "$work/tls.ext"
fi

if [ -n "$client" ]; then
	log "issuing the client certificate for $client"
	cat >"$work/client.ext" <<EOF
basicConstraints = critical, CA:FALSE
keyUsage = $leaf_ku
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
	new_key "$work/client.key"
	sign client "/CN=$client" "$work/client.ext"
	rm -f "$work/client.ext"
fi

# Check what was made before anything replaces the old files.
for leaf in tls:sslserver client:sslclient; do
	purpose=${leaf#*:}
	leaf=${leaf%:*}
	[ -f "$work/$leaf.crt" ] || continue
	openssl verify -CAfile "$work/ca.crt" -purpose "$purpose" \
		"$work/$leaf.crt" >/dev/null ||
		die "$leaf.crt does not verify against ca.crt"
done

# Certificates are public; keys stay 0600.
chmod 644 "$work"/*.crt
for f in $targets; do
	mv -f "$work/$f" "$out/$f"
done
if [ $reuse_ca -eq 0 ] && [ -z "$client" ]; then
	for f in client.crt client.key; do
		if [ -e "$out/$f" ]; then
			rm -f "$out/$f"
			log "removed $out/$f: the old CA signed it"
		fi
	done
fi
log "wrote $(echo $targets) in $out (development only: never commit these keys)"

openssl base64 -A <"$out/ca.crt"
echo
