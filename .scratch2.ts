import { Query } from 'mingo';
const docs: any[] = [
  {_id: 1, a: [{b: [1, 5]}, {b: 3}]},
  {_id: 2, a: [{b: 3}, {}]},
  {_id: 3, a: [{b: 1, c: 2}, 5, {c: 3}], x: {y: 1, z: 2}, t: [1, 2]},
  {_id: 4, s: 'ſ', k: 'K'},
];
const t = (f: any, p?: any) => console.log(JSON.stringify(f), '=>', JSON.stringify(new Query(f).find(docs, p).all()));
t({'a.b': {$in: [1]}});
t({'a.b': {$eq: 1}});
t({'a.b': {$gt: 4}});
t({'a.b': {$elemMatch: {$gt: 4}}});
t({'a.b': {$exists: true}});
t({'a.b': null});
t({s: {$regex: 's', $options: 'i'}});
t({s: {$regex: new RegExp('s', 'iu')}});
t({_id: 3}, {'a.b': 1, 'x.y': 1, 't.0': 1});
t({_id: 1}, {'a.b': 1});
