import { describe, expect, it, vi } from "vitest";
import { configurationToOpen, hasPendingReview } from "./reviews";

describe("hasPendingReview", () => {
  it("sees a pending review in any letter case", () => {
    expect(hasPendingReview([{ status: "APPROVED" }, { status: "pending" }])).toBe(true);
    expect(hasPendingReview([{ status: "APPROVED" }, { status: "REJECTED" }])).toBe(false);
    expect(hasPendingReview([])).toBe(false);
  });
});

describe("configurationToOpen", () => {
  it("opens the first configuration with pending reviews, not the first one", async () => {
    const pending = new Set([7, 9]);
    expect(await configurationToOpen([3, 7, 9], async (id) => pending.has(id))).toBe(7);
  });

  it("asks one at a time and stops at the first with pending reviews", async () => {
    const asked: number[] = [];
    let running = 0;
    const hasPending = vi.fn(async (id: number) => {
      running++;
      expect(running).toBe(1);
      asked.push(id);
      await new Promise((r) => setTimeout(r, 1));
      running--;
      return id === 5;
    });
    expect(await configurationToOpen([4, 5, 6], hasPending)).toBe(5);
    expect(asked).toEqual([4, 5]);
  });

  it("opens the first when none has pending reviews, or one cannot be asked", async () => {
    expect(await configurationToOpen([3, 7], async () => false)).toBe(3);
    expect(await configurationToOpen([3, 7], async () => Promise.reject(new Error("429")))).toBe(3);
  });

  it("asks nothing with one configuration or none", async () => {
    const hasPending = vi.fn(async () => true);
    expect(await configurationToOpen([3], hasPending)).toBe(3);
    expect(await configurationToOpen([], hasPending)).toBeNull();
    expect(hasPending).not.toHaveBeenCalled();
  });
});
