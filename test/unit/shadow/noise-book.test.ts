// Noise learnt by pointer and kind: what production's own two answers differ by, and what lies under a noisy pointer.
import { describe, expect, it } from 'vitest';
import { isLearntNoise, isUnder, NoiseBook, noiseIndex, splitNoise } from '../../../src/shadow/noise-book.ts';

describe('the noise book', () => {
  it('learns each pointer and kind once per operation', () => {
    const book = new NoiseBook();
    expect(
      book.learn('listPets', [
        { pointer: '/*/*', kind: 'value' },
        { pointer: '/meta', kind: 'missing' },
      ]),
    ).toEqual([
      { pointer: '/*/*', kind: 'value' },
      { pointer: '/meta', kind: 'missing' },
    ]);
    expect(
      book.learn('listPets', [
        { pointer: '/*/*', kind: 'value' },
        { pointer: '/*/*', kind: 'type' },
      ]),
    ).toEqual([{ pointer: '/*/*', kind: 'type' }]);
    expect(book.noise('getPet').size).toBe(0);
  });

  it('does not hide staging adding a member where production only changed a value', () => {
    const book = new NoiseBook();
    book.learn('listPets', [{ pointer: '/*/*', kind: 'value' }]);
    const noise = book.noise('listPets');
    expect([
      isLearntNoise({ pointer: '/*/*', kind: 'value' }, noise),
      isLearntNoise({ pointer: '/*/*', kind: 'extra' }, noise),
      isLearntNoise({ pointer: '/*/*', kind: 'missing' }, noise),
    ]).toEqual([true, false, false]);
  });

  it('hides every kind of difference under a learnt pointer, not a sibling with the same start', () => {
    const book = new NoiseBook();
    book.learn('listPets', [{ pointer: '/meta', kind: 'value' }]);
    const noise = book.noise('listPets');
    expect([
      isLearntNoise({ pointer: '/meta/at', kind: 'extra' }, noise),
      isLearntNoise({ pointer: '/meta/*/at', kind: 'missing' }, noise),
      isLearntNoise({ pointer: '/metadata', kind: 'value' }, noise),
      isLearntNoise({ pointer: '/meta', kind: 'type' }, noise),
    ]).toEqual([true, true, false, false]);
  });

  it('reads noise learnt without a kind (a report written by the build before) as noise of any kind there', () => {
    const noise = noiseIndex([{ pointer: '/*/*' }, { pointer: '/at', kind: 'value' }]);
    expect([
      isLearntNoise({ pointer: '/*/*', kind: 'extra' }, noise),
      isLearntNoise({ pointer: '/*/*', kind: 'value' }, noise),
      isLearntNoise({ pointer: '/at', kind: 'missing' }, noise),
    ]).toEqual([true, true, false]);
  });

  it('keeps operator-listed pointers kind-blind', () => {
    expect([isUnder('/*/updatedAt', ['/*/updatedAt']), isUnder('/*/updatedAt/x', ['/*/updatedAt']), isUnder('/*/updatedAtX', ['/*/updatedAt'])]).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('splits differences into noise, learnt or listed, and the rest', () => {
    const split = splitNoise(
      [
        { pointer: '/*/*', kind: 'value' },
        { pointer: '/*/*', kind: 'extra' },
        { pointer: '/*/updatedAt', kind: 'missing' },
        { pointer: '/*/state', kind: 'extra' },
      ],
      noiseIndex([{ pointer: '/*/*', kind: 'value' }]),
      ['/*/updatedAt'],
    );
    expect(split).toEqual({
      differences: [
        { pointer: '/*/*', kind: 'extra' },
        { pointer: '/*/state', kind: 'extra' },
      ],
      noise: [
        { pointer: '/*/*', kind: 'value' },
        { pointer: '/*/updatedAt', kind: 'missing' },
      ],
    });
  });
});
