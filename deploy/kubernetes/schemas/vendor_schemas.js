#!/usr/bin/env node
// Regenerates the two schema files beside this script from their upstream
// sources (schemas/README.md names them, with versions and checksums):
//
//   node vendor_schemas.js --k8s-swagger swagger.json --pytorchjob-crd kubeflow.org_pytorchjobs.yaml
//
// What is kept: the Kubernetes definitions reachable from the kinds in KINDS
// below, and the PyTorchJob CRD's openAPIV3Schema, both as upstream wrote
// them less every "description" (the bulk of the text, never used to
// validate). Nothing else is changed here; validate_manifest.js makes its
// adjustments (unknown fields rejected, int-or-string, quantities) when it
// loads them, where they can be read. Needs js-yaml (npm) for the CRD.
'use strict';
const fs = require('fs');
const path = require('path');

// Kinds a user of this folder is likely to add next to the job: the etcd's
// Deployment or StatefulSet, Services, a claim for the dumps, a plain Job.
const KINDS = [
  ['', 'v1', 'ConfigMap'],
  ['', 'v1', 'PersistentVolumeClaim'],
  ['', 'v1', 'Pod'],
  ['', 'v1', 'Service'],
  ['', 'v1', 'ServiceAccount'],
  ['apps', 'v1', 'Deployment'],
  ['apps', 'v1', 'StatefulSet'],
  ['batch', 'v1', 'Job'],
];

function usage(message) {
  process.stderr.write(`vendor_schemas.js: ${message}\n` +
    'usage: node vendor_schemas.js --k8s-swagger FILE --pytorchjob-crd FILE [--out DIR]\n');
  process.exit(2);
}

function strip_descriptions(node) {
  if (Array.isArray(node)) return node.map(strip_descriptions);
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const key of Object.keys(node).sort()) {
    if (key === 'description') continue;
    out[key] = strip_descriptions(node[key]);
  }
  return out;
}

function collect_refs(node, into) {
  if (Array.isArray(node)) {
    node.forEach((n) => collect_refs(n, into));
  } else if (node !== null && typeof node === 'object') {
    if (typeof node.$ref === 'string') into.push(node.$ref.replace('#/definitions/', ''));
    Object.values(node).forEach((n) => collect_refs(n, into));
  }
}

function kubernetes_subset(swagger) {
  const all = swagger.definitions;
  const roots = KINDS.map(([group, version, kind]) => {
    const name = Object.keys(all).find((n) => (all[n]['x-kubernetes-group-version-kind'] || [])
      .some((g) => g.group === group && g.version === version && g.kind === kind));
    if (name === undefined) usage(`no definition of ${group || 'core'}/${version} ${kind} in the swagger`);
    return name;
  });
  const keep = new Set();
  const todo = [...roots];
  while (todo.length > 0) {
    const name = todo.pop();
    if (keep.has(name)) continue;
    if (all[name] === undefined) usage(`the swagger refers to a missing definition ${name}`);
    keep.add(name);
    const refs = [];
    collect_refs(all[name], refs);
    todo.push(...refs);
  }
  const definitions = {};
  for (const name of [...keep].sort()) definitions[name] = strip_descriptions(all[name]);
  return { definitions };
}

function main(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!['--k8s-swagger', '--pytorchjob-crd', '--out'].includes(argv[i]) || argv[i + 1] === undefined) {
      usage(`bad argument '${argv[i]}'`);
    }
    args[argv[i]] = argv[i + 1];
  }
  if (!args['--k8s-swagger'] || !args['--pytorchjob-crd']) usage('both sources are needed');
  const out = args['--out'] || __dirname;
  const yaml = require('js-yaml');

  const swagger = JSON.parse(fs.readFileSync(args['--k8s-swagger'], 'utf8'));
  const k8s = kubernetes_subset(swagger);

  const crd = yaml.load(fs.readFileSync(args['--pytorchjob-crd'], 'utf8'));
  const version = (crd.spec.versions || []).find((v) => v.name === 'v1');
  if (crd.spec.group !== 'kubeflow.org' || crd.spec.names.kind !== 'PyTorchJob' || !version) {
    usage('the CRD is not kubeflow.org PyTorchJob with a version v1');
  }
  const pytorchjob = strip_descriptions(version.schema.openAPIV3Schema);

  const write = (name, value) => {
    fs.writeFileSync(path.join(out, name), JSON.stringify(value, null, 1) + '\n');
    process.stdout.write(`wrote ${path.join(out, name)}\n`);
  };
  write('kubernetes.schema.json', k8s);
  write('pytorchjob.schema.json', pytorchjob);
}

main(process.argv.slice(2));
