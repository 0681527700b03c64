import Fastify from 'fastify'
import { expect, test } from 'tstyche'
import '../lib/index.js'

interface Quote { price: number, currency: 'EUR' | 'USD', note?: string, legs: Array<{ from: string, to: string }> }
class Priced { constructor (readonly price: number) {} total (): number { return this.price } }

test('x', () => {
  const app = Fastify()
  app.mcp.tool({ name: 'book' }, async (_args, ctx) => {
    expect(await ctx.once('quote', async (): Promise<Quote> => ({ price: 1, currency: 'EUR', legs: [] }))).type.toBe<Quote>()
    expect(await ctx.once('tuple', () => [1, 'a'] as [number, string])).type.toBe<[number, string]>()
    expect(await ctx.once('null', () => null)).type.toBe<null>()
    expect(await ctx.once('nothing', () => {})).type.toBe<null>()
    expect(await ctx.once('u', (): unknown => 1)).type.toBe<unknown>()
    expect(await ctx.once('a', (): any => 1)).type.toBe<any>()
    expect(await ctx.once('ro', () => ({ list: ['a'] as readonly string[] }))).type.toBe<{ list: readonly string[] }>()
    expect(await ctx.once('nested', () => ({ a: { b: { c: [true, false] } } }))).type.toBe<{ a: { b: { c: boolean[] } } }>()
    expect(ctx.once).type.not.toBeCallableWith('date', () => new Date())
    expect(ctx.once).type.not.toBeCallableWith('date', async () => new Date())
    expect(ctx.once).type.not.toBeCallableWith('map', () => new Map<string, number>())
    expect(ctx.once).type.not.toBeCallableWith('set', () => new Set<string>())
    expect(ctx.once).type.not.toBeCallableWith('fn', () => () => 1)
    expect(ctx.once).type.not.toBeCallableWith('big', () => 1n)
    expect(ctx.once).type.not.toBeCallableWith('sym', () => Symbol('x'))
    expect(ctx.once).type.not.toBeCallableWith('class', () => new Priced(1))
    expect(ctx.once).type.not.toBeCallableWith('nested', () => ({ at: new Date() }))
    expect(ctx.once).type.not.toBeCallableWith('hole', () => [1, undefined])
    expect(ctx.once).type.not.toBeCallableWith('either', (): string | Date => 'x')
    // @ts-expect-error Date
    ctx.once('date', () => new Date())
    return 'ok'
  })
})
