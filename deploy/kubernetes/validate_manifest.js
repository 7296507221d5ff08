#!/usr/bin/env node
// Checks Kubernetes manifests offline:
//
//   node validate_manifest.js [--prometheus-config FILE] [--each] MANIFEST.yaml...
//
// The manifests are one set (a Service in one may serve another's
// supervisor); with --each, each is checked on its own, the schemas compiled
// once, and its lines end with "== FILE: exit N".
//
// 1. Schemas: every document against the vendored schemas in schemas/
//    (Kubernetes 1.31 core kinds, Kubeflow training-operator v1.9.0
//    PyTorchJob; schemas/README.md has their sources), with ajv. Unknown
//    fields are errors, as with `kubectl apply --validate=strict`.
// 2. What the API server and the training operator's webhook check beyond
//    the schemas and what a typo breaks most often: volume mounts naming a
//    volume, PyTorchJob replica types and their "pytorch" container.
// 3. The xpu-timer parts agree: for each container running
//    xpu_timer_supervisor, its --host, port, scrape annotations (and the
//    port deploy/prometheus/scrape-kubernetes.yml scrapes), coordinator
//    Service, job id, dump folder, /dev/shm and SYS_PTRACE.
//
// Prints one line per problem. Exit 0: valid; 1: problems; 2: usage;
// 77: ajv or js-yaml is not installed (npm install -g ajv@8.17.1 js-yaml@4.1.0).
'use strict';
const fs = require('fs');
const path = require('path');

let Ajv;
let yaml;
try {
  Ajv = require('ajv');
  yaml = require('js-yaml');
} catch (e) {
  process.stderr.write(`validate_manifest.js: ${e.message.split('\n')[0]}; install with: ` +
    'npm install -g ajv@8.17.1 js-yaml@4.1.0 (and NODE_PATH=$(npm root -g))\n');
  process.exit(77);
}

const SCHEMA_DIR = path.join(__dirname, 'schemas');
const OBJECT_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
// The API server's quantity syntax, as controller-gen writes it into CRDs.
const QUANTITY_PATTERN = '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|' +
  '([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';
const SUPERVISOR = 'xpu_timer_supervisor';
const DEFAULT_PORT = 18888;

// The variables the training operator adds to a PyTorchJob's containers
// (v1.9.0 pkg/controller.v1/pytorch/envvar.go, master.go, elastic.go).
function operator_env(doc) {
  if (doc.kind !== 'PyTorchJob') return () => false;
  const spec = doc.spec || {};
  const names = new Set(['PYTHONUNBUFFERED', 'PET_NNODES']);
  if ((spec.pytorchReplicaSpecs || {}).Master) {
    ['MASTER_ADDR', 'MASTER_PORT', 'PET_MASTER_ADDR', 'PET_MASTER_PORT', 'WORLD_SIZE', 'RANK',
      'PET_NODE_RANK'].forEach((n) => names.add(n));
  }
  if (spec.nprocPerNode !== undefined) names.add('PET_NPROC_PER_NODE');
  // Elastic jobs get the rendezvous settings as PET_* too.
  return (name) => names.has(name) || (spec.elasticPolicy !== undefined && name.startsWith('PET_'));
}

// What the API server does that plain JSON Schema does not say: fields not in
// `properties` are unknown (strict field validation), int-or-string takes
// either, a quantity is a number or a quantity string.
function adjust(node) {
  if (Array.isArray(node)) return node.map(adjust);
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) out[key] = adjust(value);
  if (out.format === 'int-or-string' || out['x-kubernetes-int-or-string'] === true) {
    delete out.type;
    delete out.format;
    if (out.anyOf === undefined) out.anyOf = [{ type: 'integer' }, { type: 'string' }];
  }
  if (out.properties !== undefined && out.additionalProperties === undefined &&
      out['x-kubernetes-preserve-unknown-fields'] !== true) {
    out.additionalProperties = false;
  }
  return out;
}

function load_validators() {
  const read = (name) => JSON.parse(fs.readFileSync(path.join(SCHEMA_DIR, name), 'utf8'));
  const definitions = read('kubernetes.schema.json').definitions;
  const by_kind = {};
  for (const [name, definition] of Object.entries(definitions)) {
    for (const g of definition['x-kubernetes-group-version-kind'] || []) {
      by_kind[`${g.group ? `${g.group}/` : ''}${g.version} ${g.kind}`] = name;
    }
  }
  definitions[QUANTITY] = { anyOf: [{ type: 'number' }, { type: 'string', pattern: QUANTITY_PATTERN }] };
  // A custom resource's metadata is checked by the API server as any object's.
  const pytorchjob = read('pytorchjob.schema.json');
  pytorchjob.properties.metadata = { $ref: `#/definitions/${OBJECT_META}` };
  definitions['org.kubeflow.v1.PyTorchJob'] = pytorchjob;
  by_kind['kubeflow.org/v1 PyTorchJob'] = 'org.kubeflow.v1.PyTorchJob';

  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: 'manifest', definitions: adjust(definitions) });
  const validators = {};
  for (const [kind, name] of Object.entries(by_kind)) {
    validators[kind] = () => ajv.getSchema(`manifest#/definitions/${name}`);
  }
  return validators;
}

// "/spec/containers/0/args" -> "spec.containers[0].args"
function field_path(pointer) {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(part) ? `[${part}]` : (out === '' ? part : `.${part}`);
  }
  return out === '' ? '(document)' : out;
}

// One line per field; the branches of an anyOf (int-or-string, quantities)
// are joined into one.
function schema_problems(validate, doc) {
  if (validate(doc)) return [];
  const any_of = new Set(validate.errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  const branches = new Map();
  const seen = new Set();
  for (const e of validate.errors) {
    const where = field_path(e.instancePath);
    if (e.keyword === 'additionalProperties') {
      seen.add(`${where}: unknown field "${e.params.additionalProperty}"`);
    } else if (any_of.has(e.instancePath)) {
      if (!branches.has(where)) branches.set(where, []);
      if (e.keyword !== 'anyOf') branches.get(where).push(e.message);
    } else {
      seen.add(`${where}: ${e.message}`);
    }
  }
  for (const [where, messages] of branches) {
    seen.add(`${where}: ${messages.length > 0 ? messages.join(', or ') : 'matches none of its types'}`);
  }
  return [...seen];
}

// Every pod template of a document, with a name for messages.
function pod_templates(doc) {
  const spec = doc.spec || {};
  if (doc.kind === 'Pod') return [{ where: 'spec', metadata: doc.metadata || {}, spec }];
  if (['Deployment', 'StatefulSet', 'Job', 'DaemonSet', 'ReplicaSet'].includes(doc.kind) && spec.template) {
    return [{ where: 'spec.template', metadata: spec.template.metadata || {}, spec: spec.template.spec || {} }];
  }
  if (doc.kind === 'PyTorchJob') {
    return Object.entries(spec.pytorchReplicaSpecs || {}).filter(([, r]) => r && r.template).map(([type, r]) => ({
      where: `spec.pytorchReplicaSpecs.${type}.template`,
      metadata: r.template.metadata || {},
      spec: r.template.spec || {},
    }));
  }
  return [];
}

function volume_problems(pod) {
  const volumes = new Set((pod.spec.volumes || []).map((v) => v.name));
  const out = [];
  for (const c of [...(pod.spec.initContainers || []), ...(pod.spec.containers || [])]) {
    for (const m of c.volumeMounts || []) {
      if (!volumes.has(m.name)) {
        out.push(`${pod.where}: container "${c.name}" mounts "${m.name}", which is no volume of the pod`);
      }
    }
  }
  return out;
}

// training-operator v1.9.0, pkg/webhooks/pytorch/pytorchjob_webhook.go.
function pytorchjob_problems(doc) {
  const out = [];
  for (const [type, r] of Object.entries((doc.spec || {}).pytorchReplicaSpecs || {})) {
    const where = `spec.pytorchReplicaSpecs.${type}`;
    if (!['Master', 'Worker'].includes(type)) out.push(`${where}: replica type must be Master or Worker`);
    const containers = (((r || {}).template || {}).spec || {}).containers || [];
    if (!containers.some((c) => c.name === 'pytorch')) {
      out.push(`${where}: no container named "pytorch" (the operator's training container)`);
    }
    if (type === 'Master' && r.replicas !== 1) out.push(`${where}.replicas: must be 1`);
    if (type === 'Worker' && r.replicas !== undefined && r.replicas < 1) out.push(`${where}.replicas: must be at least 1`);
  }
  return out;
}

// The supervisor's options (before "--"), as --flag value or --flag=value.
function supervisor_options(argv) {
  const at = argv.findIndex((a) => path.basename(String(a)) === SUPERVISOR);
  if (at < 0) return null;
  const options = {};
  let i = at + 1;
  for (; i < argv.length && argv[i] !== '--'; i++) {
    const a = String(argv[i]);
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0) options[a.slice(0, eq)] = a.slice(eq + 1);
    else if (a.startsWith('--')) options[a] = argv[++i] === undefined ? '' : String(argv[i]);
  }
  return { options, command: argv.slice(i + 1).map(String) };
}

// {annotation (as Prometheus names it), value regex, port} of each Kubernetes
// scrape job in deploy/prometheus's config that keeps pods by an annotation
// and rewrites the address to a fixed port.
function prometheus_pod_jobs(file) {
  const config = yaml.load(fs.readFileSync(file, 'utf8')) || {};
  const jobs = [];
  for (const job of config.scrape_configs || []) {
    if (!job.kubernetes_sd_configs) continue;
    const relabels = job.relabel_configs || [];
    const keep = relabels.find((r) => r.action === 'keep' && (r.source_labels || []).length === 1 &&
      r.source_labels[0].startsWith('__meta_kubernetes_pod_annotation_'));
    const address = relabels.find((r) => r.target_label === '__address__' && /:(\d+)$/.test(r.replacement || ''));
    if (keep && address) {
      jobs.push({
        name: job.job_name,
        annotation: keep.source_labels[0].slice('__meta_kubernetes_pod_annotation_'.length),
        regex: new RegExp(`^(?:${keep.regex === undefined ? '(.*)' : keep.regex})$`),
        port: Number(/:(\d+)$/.exec(address.replacement)[1]),
      });
    }
  }
  return jobs;
}

const prometheus_name = (annotation) => annotation.replace(/[^a-zA-Z0-9_]/g, '_');

function supervisor_problems(doc, pod, docs, prometheus_jobs) {
  const out = [];
  for (const c of pod.spec.containers || []) {
    const parsed = supervisor_options([...(c.command || []), ...(c.args || [])]);
    if (parsed === null) continue;
    const say = (text) => out.push(`${pod.where}: container "${c.name}": ${text}`);
    const { options, command } = parsed;
    const env = Object.fromEntries((c.env || []).map((e) => [e.name, e.value === undefined ? '(from a source)' : e.value]));
    const option = (flag, variable) => (options[flag] !== undefined ? options[flag] : env[variable]);

    if (command.length === 0) say(`${SUPERVISOR} has no command after "--"`);
    // $(VAR) the kubelet cannot expand stays literal in the command line.
    const from_operator = operator_env(doc);
    for (const a of [...(c.command || []), ...(c.args || [])]) {
      for (const m of String(a).matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
        if (env[m[1]] === undefined && !from_operator(m[1])) say(`"${a}" refers to $(${m[1]}), which is not in the container's environment`);
      }
    }

    const host = option('--host', undefined);
    if (host !== '0.0.0.0' && host !== '::') {
      say(`${SUPERVISOR} listens on ${host || '127.0.0.1'} only: give --host=0.0.0.0 so that Prometheus can scrape it`);
    }
    const port = Number(option('--port', 'XPU_TIMER_BASEPORT') || DEFAULT_PORT);
    if (!(c.ports || []).some((p) => p.containerPort === port)) say(`the supervisor's port ${port} is not in ports`);
    const annotations = pod.metadata.annotations || {};
    let scraped = false;
    if (annotations['prometheus.io/scrape'] === 'true') {
      scraped = true;
      if (annotations['prometheus.io/port'] !== String(port)) {
        say(`annotation prometheus.io/port is "${annotations['prometheus.io/port']}", the supervisor's port ${port}`);
      }
      const metrics_path = annotations['prometheus.io/path'];
      if (metrics_path !== undefined && metrics_path !== '/metrics') say(`annotation prometheus.io/path is "${metrics_path}", not /metrics`);
    }
    for (const job of prometheus_jobs) {
      const key = Object.keys(annotations).find((k) => prometheus_name(k) === job.annotation);
      if (key === undefined || !job.regex.test(annotations[key])) continue;
      scraped = true;
      if (job.port !== port) say(`Prometheus job ${job.name} scrapes pods annotated ${key} on port ${job.port}, the supervisor listens on ${port}`);
    }
    if (!scraped) say('no scrape annotation (xpu-timer/scrape or prometheus.io/scrape: "true")');

    const coordinator = option('--coordinator', 'XPU_TIMER_COORDINATOR');
    const store = /^etcd:\/\/([^:/]+):(\d+)$/.exec(coordinator || '');
    if (coordinator === undefined || coordinator === 'none') {
      say('no --coordinator: the nodes would judge hangs each on its own');
    } else if (store === null) {
      say(`--coordinator "${coordinator}" is not etcd://HOST:PORT`);
    } else if (!/^[0-9.]+$/.test(store[1])) {
      const service = docs.find((d) => d.kind === 'Service' && d.metadata && d.metadata.name === store[1].split('.')[0]);
      if (service === undefined) {
        say(`--coordinator host "${store[1]}" names no Service of these files`);
      } else {
        if (!((service.spec || {}).ports || []).some((p) => p.port === Number(store[2]))) {
          say(`Service ${service.metadata.name} has no port ${store[2]}`);
        }
        const selector = Object.entries((service.spec || {}).selector || {});
        const selected = docs.some((d) => pod_templates(d).some((t) => selector.length > 0 &&
          selector.every(([k, v]) => (t.metadata.labels || {})[k] === v)));
        if (!selected) say(`Service ${service.metadata.name} selects no pod of these files`);
      }
    }
    const has_rdzv_id = command.some((a) => /^--rdzv[-_]id(=|$)/.test(a));
    if (!option('--job-id', 'XPU_TIMER_JOB_ID') && !has_rdzv_id) {
      say('no --job-id (nor XPU_TIMER_JOB_ID or torchrun --rdzv-id): the nodes of one job must share it');
    }

    const dump_dir = option('--dump-dir', undefined);
    const mounts = c.volumeMounts || [];
    const on_volume = (dir) => mounts.some((m) => dir === m.mountPath || dir.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
    if (dump_dir === undefined || !on_volume(dump_dir)) {
      say(`the dump folder ${dump_dir || '(default ./xpu_timer_dump)'} is on no volume: dumps die with the container`);
    }
    const shm = mounts.find((m) => m.mountPath === '/dev/shm');
    const shm_volume = shm && (pod.spec.volumes || []).find((v) => v.name === shm.name);
    if (!shm_volume || !shm_volume.emptyDir || shm_volume.emptyDir.medium !== 'Memory') {
      say('/dev/shm is not an emptyDir of medium Memory (the run folder and NCCL live there; the default is 64 MB)');
    }
    const caps = ((c.securityContext || {}).capabilities || {}).add || [];
    if (!caps.includes('SYS_PTRACE') && !caps.includes('CAP_SYS_PTRACE')) {
      say('no SYS_PTRACE capability: no stacks on a hang where Yama ptrace_scope is 2');
    }
  }
  return out;
}

// The problems of one set of manifests, validated together (a Service in
// one file may answer a supervisor's --coordinator in another).
function check_files(files, prometheus_config, prometheus_jobs, validators) {
  const problems = [];
  if (prometheus_jobs instanceof Error) {
    problems.push(`${prometheus_config}: ${prometheus_jobs.message.split('\n')[0]}`);
    prometheus_jobs = [];
  }
  const documents = [];
  for (const file of files) {
    try {
      yaml.loadAll(fs.readFileSync(file, 'utf8'), (doc) => documents.push({ file, doc }), { filename: file });
    } catch (e) {
      problems.push(`${file}: ${e.message.split('\n')[0]}`);
    }
  }
  const docs = documents.map((d) => d.doc).filter((d) => d !== null && typeof d === 'object');
  for (const { file, doc } of documents) {
    if (doc === null) continue;
    const name = `${file}: ${(doc && doc.kind) || '?'} ${((doc && doc.metadata) || {}).name || '?'}`;
    const kind = `${doc && doc.apiVersion} ${doc && doc.kind}`;
    if (validators[kind] === undefined) {
      problems.push(`${name}: no schema for apiVersion/kind "${kind}" (schemas/README.md lists the kinds)`);
      continue;
    }
    const found = schema_problems(validators[kind](), doc);
    if (doc.kind === 'PyTorchJob') found.push(...pytorchjob_problems(doc));
    for (const pod of pod_templates(doc)) {
      found.push(...volume_problems(pod), ...supervisor_problems(doc, pod, docs, prometheus_jobs));
    }
    problems.push(...[...new Set(found)].map((p) => `${name}: ${p}`));
  }
  for (const p of problems) process.stdout.write(`${p}\n`);
  const count = documents.filter((d) => d.doc !== null).length;
  process.stdout.write(problems.length === 0
    ? `${count} documents valid\n`
    : `${problems.length} problem${problems.length === 1 ? '' : 's'} in ${files.join(', ')}\n`);
  return problems.length === 0 ? 0 : 1;
}

function main(argv) {
  const files = [];
  let prometheus_config;
  let each = false;
  const usage = (why) => {
    process.stderr.write(`validate_manifest.js: ${why}\n` +
      'usage: node validate_manifest.js [--prometheus-config FILE] [--each] MANIFEST.yaml...\n');
    return 2;
  };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--prometheus-config') {
      if (argv[i + 1] === undefined) return usage('--prometheus-config needs a file');
      prometheus_config = argv[++i];
    } else if (argv[i] === '--each') {
      each = true;
    } else if (argv[i].startsWith('-')) {
      return usage(`unknown option '${argv[i]}'`);
    } else {
      files.push(argv[i]);
    }
  }
  if (files.length === 0) return usage('no manifest given');
  let prometheus_jobs = [];
  if (prometheus_config !== undefined) {
    try {
      prometheus_jobs = prometheus_pod_jobs(prometheus_config);
    } catch (e) {
      prometheus_jobs = e;
    }
  }
  const validators = load_validators();
  if (!each) return check_files(files, prometheus_config, prometheus_jobs, validators);
  // --each: every file on its own, as if given alone, after one compilation
  // of the schemas; each file's lines end with "== FILE: exit N".
  let worst = 0;
  for (const file of files) {
    const rc = check_files([file], prometheus_config, prometheus_jobs, validators);
    process.stdout.write(`== ${file}: exit ${rc}\n`);
    worst = Math.max(worst, rc);
  }
  return worst;
}

process.exit(main(process.argv.slice(2)));
