/** string(double) in cel-go's words: Go's shortest %g. */
import { expect } from 'chai';
import { evaluate } from './evaluate.ts';

describe('policy library: string(double)', function () {
  const cases: [string, string][] = [
    ['string(3000000.0)', '3e+06'],
    ['string(123456.5)', '123456.5'],
    ['string(1234567.0)', '1.234567e+06'],
    ['string(0.0001)', '0.0001'],
    ['string(0.00003)', '3e-05'],
    ['string(1.0)', '1'],
    ['string(-2.5)', '-2.5'],
    ['string(1.0 / 3.0)', '0.3333333333333333'],
    ['string(2.5e100)', '2.5e+100'],
    ['string(1.0 / 0.0)', '+Inf'],
    ['string(-1.0 / 0.0)', '-Inf'],
    ['string(0.0)', '0'],
  ];
  for (const [expression, want] of cases) {
    it(`${expression} is "${want}"`, function () {
      expect(evaluate(expression)).to.equal(want);
    });
  }
});
