/** Tolerations compared and merged as upstream's pkg/util/tolerations and core helper do (TestIsSuperset, TestMergeTolerations, TestVerifyAgainstWhitelist). */
import { expect } from 'chai';
import { addOrUpdateToleration, isSuperset, mergeTolerations, verifyAgainstWhitelist } from '../../../src/handlers/tolerations.ts';

const t = (key: string, operator: string, value = '', effect = '', tolerationSeconds?: number) => ({ key, operator, value, effect, ...(tolerationSeconds !== undefined ? { tolerationSeconds } : {}) });

describe('handlers: tolerations', function () {
  it('isSuperset: equal, wildcard key, empty effect, Exists over Equal, tolerationSeconds bounds', function () {
    expect(isSuperset(t('foo', 'Equal', 'bar', 'NoSchedule'), t('foo', 'Equal', 'bar', 'NoSchedule'))).to.equal(true);
    expect(isSuperset(t('', 'Exists'), t('foo', 'Equal', 'bar', 'NoSchedule'))).to.equal(true);
    expect(isSuperset(t('foo', 'Exists'), t('foo', 'Equal', 'bar', 'NoExecute'))).to.equal(true);
    expect(isSuperset(t('foo', 'Equal', 'bar'), t('foo', 'Exists'))).to.equal(false);
    expect(isSuperset(t('foo', 'Equal', 'bar', 'NoSchedule'), t('foo', 'Equal', 'baz', 'NoSchedule'))).to.equal(false);
    expect(isSuperset(t('foo', 'Exists', '', 'NoExecute', 100), t('foo', 'Exists', '', 'NoExecute', 50))).to.equal(true);
    expect(isSuperset(t('foo', 'Exists', '', 'NoExecute', 100), t('foo', 'Exists', '', 'NoExecute', 500))).to.equal(false);
    expect(isSuperset(t('foo', 'Exists', '', 'NoExecute', 100), t('foo', 'Exists', '', 'NoExecute'))).to.equal(false);
  });

  it('mergeTolerations drops what another covers and keeps order', function () {
    expect(mergeTolerations([t('foo', 'Equal', 'bar', 'NoSchedule')], [t('foo', 'Exists')])).to.deep.equal([t('foo', 'Exists')]);
    expect(mergeTolerations([t('a', 'Exists')], [t('b', 'Exists'), t('a', 'Exists')])).to.deep.equal([t('a', 'Exists'), t('b', 'Exists')]);
    expect(mergeTolerations([], [])).to.deep.equal([]);
  });

  it('verifyAgainstWhitelist: every toleration covered, an empty whitelist allows all', function () {
    expect(verifyAgainstWhitelist([t('foo', 'Equal', 'bar', 'NoSchedule')], [t('foo', 'Exists')])).to.equal(true);
    expect(verifyAgainstWhitelist([t('other', 'Exists')], [t('foo', 'Exists')])).to.equal(false);
    expect(verifyAgainstWhitelist([t('other', 'Exists')], [])).to.equal(true);
  });

  it('addOrUpdateToleration replaces the matching toleration unless it is the same, else appends', function () {
    const plain = t('gpu', 'Exists', '', 'NoSchedule');
    expect(addOrUpdateToleration([plain], plain)).to.equal(undefined);
    expect(addOrUpdateToleration([t('gpu', 'Exists', '', 'NoSchedule', 5)], plain)).to.deep.equal([plain]);
    expect(addOrUpdateToleration([t('x', 'Exists')], plain)).to.deep.equal([t('x', 'Exists'), plain]);
  });
});
