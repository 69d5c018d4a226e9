#!/bin/sh
# ctx-conformance reads no OpenSSL configuration: an $OPENSSL_CONF naming a provider module (a .so
# whose constructor writes $CTX_TEST_MARKER) runs that code in the openssl binary (the control) and
# never in the kit, which still certifies a valid plugin.
# Usage: openssl_conf_loads_nothing.sh KIT PLUGIN MARKER_MODULE
set -eu
kit=$1 plugin=$2 module=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/provider.cnf" <<CONF
openssl_conf = openssl_init
[openssl_init]
providers = providers
[providers]
default = default_provider
extra = extra_provider
[default_provider]
activate = 1
[extra_provider]
module = $module
activate = 1
CONF
export OPENSSL_CONF="$dir/provider.cnf" CTX_TEST_MARKER="$dir/marker"
/usr/bin/openssl version > /dev/null 2>&1 || true
[ -e "$dir/marker" ] || { echo "control: the configuration does not load its module"; exit 1; }
rm -f "$dir/marker"
"$kit" "$plugin" > "$dir/kit.out" 2>&1 || { cat "$dir/kit.out"; echo "the kit failed"; exit 1; }
[ ! -e "$dir/marker" ] || { echo "the kit ran a module its OpenSSL configuration named"; exit 1; }
echo "no module of the configuration ran in the kit"
