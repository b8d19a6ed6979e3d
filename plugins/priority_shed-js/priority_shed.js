// `priority_shed`: under load, keep what matters. Each record has a priority; while the buffer
// lags (records written and not yet read, summed over every tier) by more than `max_lag`,
// records below `min_priority` are dropped with a reason (dead-lettered; the client still gets
// 200). With two tiers they are two lanes: priority >= `min_priority` goes to tier 0 (the high
// lane), lower to tier 1, and workers read tier 0 first while it has records.
//
//   buffer:
//     priority_shed:
//       max_lag: 100000            # required: the lag above which low priorities are shed
//       min_priority: 5            # default 5: records below it are shed, and go to tier 1
//       header: X-Priority         # default X-Priority: an integer priority per request
//       default_priority: 0        # default 0: without a usable header or origin rule
//       origin_priority: http:/audit=9,http:/debug=0   # optional: priority by origin prefix
//       tiers:
//         - kafka: { bootstrap_servers: [127.0.0.1:9092], topics: [{ name: logs-high, group_id: sluice }] }
//         - kafka: { bootstrap_servers: [127.0.0.1:9092], topics: [{ name: logs-low, group_id: sluice }] }
//
// A record's priority: the `header`'s value when it is an integer; else the priority of the
// longest `origin_priority` prefix its origin (`http:/path`) starts with; else
// `default_priority`. No moves between tiers. Contract 0.2 (`wit/v0.2`, world `buffer-plugin`),
// built by `./scripts/build-plugins` with componentize-js (pinned in plugins/tools/package.json).

import { tiers } from 'sluice:plugin/buffer-host@0.2.0';

const INTEGER = /^[+-]?[0-9]+$/;

let options = null;

function integer(key, value, { min = -Infinity } = {}) {
  const n = INTEGER.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    const what = min === 1 ? 'a whole number above 0' : 'a whole number';
    throw `option \`${key}\` must be ${what}, got \`${value}\``;
  }
  return n;
}

// `http:/audit=9,http:/debug=0` -> [['http:/audit', 9], ['http:/debug', 0]], longest first.
function originRules(value) {
  const rules = value.split(',').map((pair) => {
    const at = pair.lastIndexOf('=');
    const prefix = pair.slice(0, at).trim();
    const priority = pair.slice(at + 1).trim();
    if (at < 0 || prefix === '' || !INTEGER.test(priority)) {
      throw `option \`origin_priority\` must be \`prefix=priority\` pairs separated by commas (\`http:/audit=9,http:/debug=0\`), got \`${value}\``;
    }
    return [prefix, Number(priority)];
  });
  return rules.sort((a, b) => b[0].length - a[0].length);
}

export const configure = {
  configure(entries) {
    const given = { header: 'x-priority', defaultPriority: 0, origins: [], minPriority: 5, maxLag: null };
    for (const { key, value } of entries) {
      if (key === 'header') {
        if (!/^[A-Za-z0-9_-]+$/.test(value)) {
          throw `option \`header\` must be a header name such as \`X-Priority\`, got \`${value}\``;
        }
        given.header = value.toLowerCase();
      } else if (key === 'default_priority') {
        given.defaultPriority = integer(key, value);
      } else if (key === 'origin_priority') {
        given.origins = originRules(value);
      } else if (key === 'min_priority') {
        given.minPriority = integer(key, value);
      } else if (key === 'max_lag') {
        given.maxLag = integer(key, value, { min: 1 });
      } else {
        throw `unknown option \`${key}\`; priority_shed takes \`header\`, \`default_priority\`, \`origin_priority\`, \`min_priority\` and \`max_lag\``;
      }
    }
    if (given.maxLag === null) {
      throw 'option `max_lag` is required: the lag (records written and not yet read, over every tier) above which records below `min_priority` are shed';
    }
    options = given;
  },
};

function priority(record) {
  const header = record.headers.find(([name]) => name.toLowerCase() === options.header);
  if (header !== undefined && INTEGER.test(header[1].trim())) {
    return Number(header[1].trim());
  }
  const rule = options.origins.find(([prefix]) => record.origin.startsWith(prefix));
  return rule === undefined ? options.defaultPriority : rule[1];
}

export const bufferPolicy = {
  describe() {
    return { headers: [options.header] };
  },

  onWrite(records) {
    const all = tiers();
    // u64s arrive as BigInts.
    const lag = all.reduce((sum, tier) => sum + tier.lag, 0n);
    const shedding = lag > BigInt(options.maxLag);
    const { minPriority, maxLag } = options;
    return records.map((record) => {
      const p = priority(record);
      if (p >= minPriority) return { tag: 'tier', val: [0, undefined] };
      if (shedding) {
        return { tag: 'drop', val: `shed: priority ${p} below min_priority ${minPriority} while lag ${lag} > max_lag ${maxLag}` };
      }
      return { tag: 'tier', val: [all.length >= 2 ? 1 : 0, undefined] };
    });
  },

  // Favour the high lane: tier 0 while it has records not yet read, else the tiers in turn.
  nextRead(worker) {
    const all = tiers();
    return all.length > 0 && all[0].lag > 0n ? 0 : undefined;
  },

  tick() {
    return [];
  },
};
