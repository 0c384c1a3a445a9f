/** The optional-type functions cel-js lacks: optional.ofNonZeroValue, optMap, optFlatMap, equality. */
import { expect } from 'chai';
import { compileError, evaluate } from './evaluate.ts';

describe('policy library: optionals', function () {
  it('ofNonZeroValue is none for zero values of every type', function () {
    for (const zero of ['null', "''", '0', '0.0', 'false', '[]', '{}']) {
      expect(evaluate(`optional.ofNonZeroValue(${zero}).hasValue()`), zero).to.equal(false);
    }
    expect(evaluate('optional.ofNonZeroValue(42).or(optional.of(20)).value() == 42')).to.equal(true);
    expect(evaluate('optional.ofNonZeroValue(object.labels).hasValue()', { labels: {} })).to.equal(false);
  });

  it('optMap transforms a present value and keeps none', function () {
    expect(evaluate('optional.of(42).optMap(y, y + 1).value()')).to.equal(43n);
    expect(evaluate('optional.none().optMap(y, y + 1).hasValue()')).to.equal(false);
    expect(evaluate('object.?spec.?replicas.optMap(r, r * 2).orValue(0)', { spec: { replicas: 3 } })).to.equal(6n);
    expect(evaluate('object.?spec.?replicas.optMap(r, r * 2).orValue(0)', { spec: {} })).to.equal(0n);
  });

  it('optFlatMap chains optional lookups', function () {
    expect(evaluate("{'key': {'subkey': 'subvalue'}}.?key.optFlatMap(k, k.?subkey).value()")).to.equal('subvalue');
    expect(evaluate('object.?metadata.optFlatMap(m, m.?labels).optFlatMap(l, l.?app).orValue("none")', { metadata: { labels: {} } })).to.equal('none');
  });

  it('names the type of an optional optional_type, as cel-go does', function () {
    // true on kube-apiserver 1.37; refused on apply here before (no type() overload for optionals)
    expect(evaluate('type(optional.none()) == optional_type && type(object.?a) == optional_type && type(1) != optional_type', { a: 1 })).to.equal(true);
  });

  it('compares optionals by presence and value', function () {
    expect(evaluate('optional.none() == optional.none()')).to.equal(true);
    expect(evaluate('optional.of(1) == optional.of(1)')).to.equal(true);
    expect(evaluate('optional.of(1) == optional.none()')).to.equal(false);
    expect(evaluate('optional.of(1) != optional.of(2)')).to.equal(true);
    expect(evaluate('object.?a == optional.of(1.0)', { a: 1 })).to.equal(true);
  });

  it('refuses comparing orValue on a dyn receiver with null, as cel-go types it by its argument', function () {
    expect(compileError('variables.o.orValue({}) != null')).to.equal("found no matching overload for '_!=_' applied to '(map(dyn, dyn), null)'");
    expect(compileError("null == object.data.orValue('')")).to.equal("found no matching overload for '_==_' applied to '(null, string)'");
    // an optional of dyn keeps dyn
    expect(evaluate('object.?data.orValue({}) != null', { data: {} })).to.equal(true);
  });
});
